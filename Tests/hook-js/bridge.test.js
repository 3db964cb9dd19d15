// bridge.js: window.satchel, the page's side of the JS bridge.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { fakeWindow, inject, secret, checkProof } = require("./harness");

const bridged = (reply, config = {}) =>
  inject(fakeWindow({ handlers: { satchelBridge: reply } }), Object.assign({ proofSecret: secret, bridgeHandler: "satchelBridge", bridgeTimeoutMs: 200 }, config));

test("call posts the name and JSON params with a proof, and resolves with the handler's result", async () => {
  const w = bridged((message) => JSON.stringify({ ok: true, result: JSON.stringify({ echo: JSON.parse(message.params) }) }));
  assert.deepEqual(await w.satchel.call("cart.add", { sku: "A1", n: 2 }), { echo: { sku: "A1", n: 2 } });
  assert.deepEqual(await w.satchel.call("ping"), { echo: null });
  const [first, second] = w.messages.map((m) => m.message);
  assert.equal(first.name, "cart.add");
  assert.equal(first.params, '{"sku":"A1","n":2}');
  assert.match(first.id, /^[0-9a-f]{8}-1$/);
  assert.equal(second.id, first.id.replace(/1$/, "2"));
  assert.equal(checkProof(first.token, "bridge", first.id + "\ncart.add\n" + first.params), null);
});

test("an answer that is not ok, a rejected post and params that are not JSON reject with a code", async () => {
  const w = bridged((message) => {
    if (message.name === "fails") return { ok: false, code: "denied", message: "no" };
    return Promise.reject(new Error("handler gone"));
  });
  await assert.rejects(w.satchel.call("fails"), { code: "denied", message: "no" });
  await assert.rejects(w.satchel.call("throws"), { code: "handler-error", message: "handler gone" });
  const loop = {};
  loop.self = loop;
  await assert.rejects(w.satchel.call("x", loop), { code: "bad-params" });
  assert.equal(w.messages.length, 2, "params that are not JSON were posted");
});

test("a call without an answer in bridgeTimeoutMs rejects with timeout; a late answer changes nothing", async () => {
  let answer;
  const w = bridged(() => new Promise((resolve) => { answer = resolve; }), { bridgeTimeoutMs: 30 });
  const started = Date.now();
  await assert.rejects(w.satchel.call("slow"), { code: "timeout", message: "satchel: slow had no answer in 30 ms" });
  assert.ok(Date.now() - started >= 25, "rejected before the timeout");
  answer({ ok: true, result: "1" });
  await new Promise((resolve) => setTimeout(resolve, 10));
});

test("native code reaches the page's handlers and listeners; window.satchel cannot be replaced", async () => {
  const w = bridged(() => ({ ok: true }));
  const heard = [];
  const listener = (detail) => heard.push(detail);
  w.satchel.on("cart", listener);
  w.satchel.on("cart", () => { throw new Error("a listener failed"); });
  w.__satchelHook.bridgeEvent("cart", { n: 1 });
  w.satchel.off("cart", listener);
  w.__satchelHook.bridgeEvent("cart", { n: 2 });
  assert.deepEqual(heard, [{ n: 1 }]);
  assert.equal(w.errors.length, 2, "a failing listener stopped the others or went unreported");
  w.satchel.handle("title", (params) => "title of " + params.id);
  assert.equal(await w.__satchelHook.bridgeInvoke("title", { id: 7 }), "title of 7");
  await assert.rejects(w.__satchelHook.bridgeInvoke("missing"), { code: "no-handler" });
  const original = w.satchel;
  assert.throws(() => { "use strict"; w.satchel = {}; }, TypeError);
  assert.equal(w.satchel, original);
  assert.ok(Object.isFrozen(w.satchel));
});

test("no bridge without its handler in the configuration or in the web view", () => {
  assert.equal(inject(fakeWindow({ handlers: { satchelBridge: () => ({}) } })).satchel, undefined);
  assert.equal(inject(fakeWindow(), { bridgeHandler: "satchelBridge", bridgeTimeoutMs: 10 }).satchel, undefined);
});
