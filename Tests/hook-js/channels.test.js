// channels.js (with body.js): which requests are rewritten and how their bodies travel.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { fakeWindow, inject, sentRequests, FormData } = require("./harness");

const API = "https://m.shop.com/api/echo";
const satchelHeaders = (headers) => Object.keys(headers).filter((name) => name.toLowerCase().startsWith("x-satchel"));
const text = (bytes) => new TextDecoder().decode(bytes);
const xhr = (w, method, url, body, headers = {}) => {
  const request = new w.XMLHttpRequest();
  request.open(method, url);
  for (const [name, value] of Object.entries(headers)) request.setRequestHeader(name, value);
  request.send(body);
};

test("GET and HEAD go out untouched, by fetch and by XHR", async () => {
  const w = inject(fakeWindow());
  await w.fetch(API + "?q=1");
  await w.fetch(API, { method: "HEAD" });
  xhr(w, "get", API, null);
  xhr(w, "HEAD", API, null);
  const sent = await sentRequests(w, 4);
  assert.equal(sent.length, 4);
  for (const request of sent) assert.deepEqual(satchelHeaders(request.headers), [], `${request.via} ${request.method}`);
});

test("requests to other origins keep their bodies and get no satchel headers", async () => {
  const w = inject(fakeWindow());
  await w.fetch("https://elsewhere.example/api", { method: "POST", body: "keep me" });
  xhr(w, "POST", "https://m.shop.com:8443/api", "keep me too");
  const sent = await sentRequests(w, 2);
  assert.equal(text(sent[0].body), "keep me");
  assert.equal(text(sent[1].body), "keep me too");
  for (const request of sent) assert.deepEqual(satchelHeaders(request.headers), []);
});

test("a small text body travels in the body header, percent-encoded, with the method and its type", async () => {
  const w = inject(fakeWindow());
  const body = JSON.stringify({ name: "Zoë ☕", q: "a+b&c=%" });
  await w.fetch("/api/echo", { method: "put", body, headers: { "Content-Type": "application/json" } });
  xhr(w, "POST", API, "hello world");
  const [viaFetch, viaXHR] = await sentRequests(w, 2);
  assert.equal(viaFetch.method, "PUT");
  assert.equal(viaFetch.body, null, "the body still went in the request");
  assert.equal(viaFetch.headers["x-satchel-body"], encodeURIComponent(body));
  assert.equal(viaFetch.headers["x-satchel-method"], "PUT");
  assert.equal(viaFetch.headers["x-satchel-content-type"], "application/json");
  assert.equal(viaXHR.headers["x-satchel-body"], "hello%20world");
  assert.equal(viaXHR.headers["x-satchel-method"], "POST");
  assert.equal(viaXHR.headers["x-satchel-content-type"], "text/plain;charset=UTF-8");
  assert.equal(viaXHR.body, null);
});

test("the configured header names are the ones sent", async () => {
  const w = inject(fakeWindow(), { bodyHeader: "X-App-Body", methodHeader: "X-App-Method", contentTypeHeader: "X-App-Type" });
  await w.fetch(API, { method: "PATCH", body: "small" });
  const [request] = await sentRequests(w, 1);
  assert.deepEqual(request.headers, { "x-app-body": "small", "x-app-method": "PATCH", "x-app-type": "text/plain;charset=UTF-8" });
});

test("in a web view, a large or binary body goes to the message handler first and the request carries its id", async () => {
  const order = [];
  const w = fakeWindow({ handlers: { satchelBody: (message) => { order.push("stored " + message.id); return "ok"; } } });
  inject(w);
  const large = "é".repeat(5000); // 30,000 characters once percent-encoded: over the 8,192 threshold
  const binary = new Uint8Array(300).map((_, i) => i);
  await w.fetch(API, { method: "POST", body: large });
  xhr(w, "PUT", API, binary.buffer);
  const sent = await sentRequests(w, 2);
  assert.equal(w.messages.length, 2);
  const [textBody, binaryBody] = w.messages.map((m) => m.message);
  assert.equal(Buffer.from(textBody.base64, "base64").toString("utf8"), large);
  assert.equal(textBody.contentType, "text/plain;charset=UTF-8");
  assert.equal(textBody.method, "POST");
  assert.deepEqual([...Buffer.from(binaryBody.base64, "base64")], [...binary]);
  assert.equal(binaryBody.contentType, null, "a body sent without a type must be stored without one");
  assert.equal(binaryBody.method, "PUT");
  assert.match(textBody.id, /^[0-9a-f]{32}$/);
  assert.notEqual(textBody.id, binaryBody.id);
  assert.equal(sent[0].headers["x-satchel-body-id"], textBody.id);
  assert.equal(sent[0].headers["x-satchel-body"], undefined);
  assert.equal(sent[1].headers["x-satchel-body-id"], binaryBody.id);
  assert.equal(sent[1].headers["x-satchel-method"], "PUT");
  assert.equal(order.length, 2, "the request went before its body was stored");
});

test("without a message handler, the body goes to the server's body store with the configured method header", async () => {
  const w = inject(fakeWindow(), { bodyEndpoint: "/_store/", methodHeader: "X-App-Method", headerThreshold: 10 });
  await w.fetch(API, { method: "delete", body: "more than ten characters", headers: { "Content-Type": "text/x-custom" } });
  const [store, request] = await sentRequests(w, 2);
  const id = request.headers["x-satchel-body-id"];
  assert.match(id, /^[0-9a-f]{32}$/);
  assert.equal(store.url, "/_store/" + id);
  assert.equal(store.method, "POST");
  assert.equal(text(store.body), "more than ten characters");
  assert.equal(store.headers["content-type"], "text/x-custom");
  // The store learns the request's method under the configured name, not a fixed X-Satchel-Method.
  assert.equal(store.headers["x-app-method"], "DELETE");
  assert.equal(store.headers["x-satchel-method"], undefined);
  assert.equal(request.headers["x-app-method"], "DELETE");
});

test("a body the store refuses: fetch fails, XHR sends the body as it was and the error is logged", async () => {
  const w = inject(fakeWindow({ respond: (request) => (request.url.startsWith("/_satchel/bodies/") ? { status: 500 } : null) }));
  await assert.rejects(w.fetch(API, { method: "POST", body: new Uint8Array([1, 2, 3]) }), /body store refused the body \(500\)/);
  xhr(w, "POST", API, new Uint8Array([4, 5]));
  const sent = await sentRequests(w, 3);
  const last = sent[2];
  assert.equal(last.via, "xhr");
  assert.deepEqual([...last.body], [4, 5]);
  assert.deepEqual(satchelHeaders(last.headers), []);
  assert.equal(w.errors.length, 1);
});

test("FormData, Blob and Request bodies are bytes for the store; URLSearchParams is text; each keeps its type", async () => {
  const w = fakeWindow({ handlers: { satchelBody: () => "ok" } });
  inject(w);
  const form = new FormData();
  form.append("caption", "Ünïcode");
  form.append("file", new Blob([new Uint8Array([0, 255])], { type: "image/png" }), "p.png");
  await w.fetch(API, { method: "POST", body: form });
  await w.fetch(API, { method: "POST", body: new Blob(["blob text"], { type: "text/x-blob" }) });
  await w.fetch(new Request(API, { method: "POST", body: "from a Request", headers: { "Content-Type": "text/x-req" } }));
  await w.fetch(API, { method: "POST", body: new URLSearchParams([["q", "a b"]]) });
  const sent = await sentRequests(w, 4);
  const stored = w.messages.map((m) => m.message);
  assert.equal(stored.length, 3);
  assert.match(stored[0].contentType, /^multipart\/form-data; boundary=/);
  assert.ok(Buffer.from(stored[0].base64, "base64").toString("latin1").includes('name="caption"'));
  assert.deepEqual([stored[1].contentType, Buffer.from(stored[1].base64, "base64").toString()], ["text/x-blob", "blob text"]);
  assert.deepEqual([stored[2].contentType, Buffer.from(stored[2].base64, "base64").toString()], ["text/x-req", "from a Request"]);
  assert.deepEqual(sent.slice(0, 3).map((r) => r.headers["x-satchel-body-id"]), stored.map((s) => s.id));
  assert.equal(sent[2].url, API);
  assert.equal(sent[3].headers["x-satchel-body"], encodeURIComponent("q=a+b"));
  assert.equal(sent[3].headers["x-satchel-content-type"], "application/x-www-form-urlencoded;charset=UTF-8");
});

test("keepalive fetches and beacons are marked so the native side lets them outlive the page", async () => {
  const w = inject(fakeWindow());
  await w.fetch(API, { method: "POST", body: "bye", keepalive: true });
  await w.fetch(API, { method: "POST", body: "stay" });
  assert.equal(w.navigator.sendBeacon("https://elsewhere.example/b", "theirs"), true);
  assert.equal(w.navigator.sendBeacon(API, "beacon payload"), true);
  const [keepalive, plain, foreignBeacon, beacon] = await sentRequests(w, 4);
  assert.equal(keepalive.headers["x-satchel-keepalive"], "1");
  assert.equal(keepalive.keepalive, true);
  assert.equal(plain.headers["x-satchel-keepalive"], undefined);
  assert.deepEqual(foreignBeacon, { via: "beacon", url: "https://elsewhere.example/b" }, "a beacon to another origin stays a beacon");
  assert.equal(beacon.via, "fetch", "an intercepted beacon becomes a fetch, which can carry headers");
  assert.equal(beacon.method, "POST");
  assert.equal(beacon.headers["x-satchel-body"], "beacon%20payload");
  assert.equal(beacon.headers["x-satchel-keepalive"], "1");
  assert.equal(beacon.keepalive, true);
});
