// proof.js: every body the hook moves carries a BodyProof the Swift side can check (docs/formats.md, "Hook headers
// and proofs"): node's own HMAC-SHA256 is the oracle for the hook's written-out SHA-256.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const { fakeWindow, inject, sentRequests, secret, checkProof } = require("./harness");

const API = "https://m.shop.com/api";

test("without a secret no proof is sent", async () => {
  const w = inject(fakeWindow());
  await w.fetch(API, { method: "POST", body: "hi" });
  const [request] = await sentRequests(w, 1);
  assert.equal(request.headers["x-satchel-body"], "hi");
  assert.equal(request.headers["x-satchel-token"], undefined);
});

test("a header-channel proof is bound to the header's value, for every message length around SHA-256's blocks", async () => {
  const w = inject(fakeWindow(), { proofSecret: secret });
  // The proof message is ~50 bytes before the binding: these lengths cross the 55/56/64-byte padding edges twice.
  for (let n = 0; n <= 140; n++) await w.fetch(API, { method: "POST", body: "é".repeat(n % 7) + "a".repeat(n) });
  const sent = await sentRequests(w, 141);
  const nonces = new Set();
  for (const request of sent) {
    const token = request.headers["x-satchel-token"];
    assert.equal(checkProof(token, "header", request.headers["x-satchel-body"]), null);
    nonces.add(token.split(".")[1]);
  }
  assert.equal(nonces.size, sent.length, "a nonce was used twice");
});

test("a body-store proof is bound to the id, both on the request and on the store's own POST", async () => {
  const w = inject(fakeWindow(), { proofSecret: secret });
  await w.fetch(API, { method: "POST", body: new Uint8Array(10) });
  const [store, request] = await sentRequests(w, 2);
  const id = request.headers["x-satchel-body-id"];
  assert.equal(checkProof(request.headers["x-satchel-token"], "body-store", id), null);
  assert.equal(checkProof(store.headers["x-satchel-token"], "body-store", id), null);
  assert.notEqual(checkProof(request.headers["x-satchel-token"], "header", id), null, "the channel is part of the proof");
  assert.notEqual(checkProof(request.headers["x-satchel-token"], "body-store", id + "0"), null, "the binding is part of the proof");
});

test("a proof made with another secret does not check, and a key longer than a block is hashed first", async () => {
  const long = crypto.randomBytes(100).toString("base64url");
  const w = inject(fakeWindow(), { proofSecret: long });
  await w.fetch(API, { method: "POST", body: "x" });
  const [request] = await sentRequests(w, 1);
  assert.equal(checkProof(request.headers["x-satchel-token"], "header", "x", long), null);
  assert.match(checkProof(request.headers["x-satchel-token"], "header", "x", secret), /^mac /);
});
