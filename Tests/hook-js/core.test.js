// wrapper.js and core.js: where the hook acts at all, and what it leaves on window.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { fakeWindow, inject, sentRequests, secret, render, defaults } = require("./harness");

test("the rendered hook is one script that parses, with the configuration object as its argument", () => {
  const script = render(JSON.stringify(defaults));
  assert.doesNotThrow(() => new Function(script));
  assert.ok(script.endsWith("})(" + JSON.stringify(defaults) + ");\n"));
  assert.ok(!script.includes("SATCHEL_CONFIG") && !script.includes("@features"));
});

test("injecting twice installs once: one set of headers, one stored body", async () => {
  const w = fakeWindow({ handlers: { satchelBody: () => "stored" } });
  inject(w);
  const fetchOnce = w.fetch;
  inject(w);
  assert.equal(w.fetch, fetchOnce, "the second injection replaced fetch again");
  await w.fetch("/api", { method: "POST", body: "x".repeat(10000) });
  const [request] = await sentRequests(w, 1);
  assert.equal(w.messages.length, 1, "the body was stored twice");
  assert.equal(request.headers["x-satchel-body-id"], w.messages[0].message.id);
  assert.equal(Object.keys(request.headers).filter((name) => name.startsWith("x-satchel")).length, 3, JSON.stringify(request.headers));
});

test("on a page of another origin the hook does nothing", async () => {
  const w = fakeWindow({ url: "https://elsewhere.example/page" });
  const pageFetch = w.fetch;
  const pageSend = w.XMLHttpRequest.prototype.send;
  inject(w);
  assert.equal(w.__satchelHook, undefined);
  assert.equal(w.fetch, pageFetch);
  assert.equal(w.XMLHttpRequest.prototype.send, pageSend);
});

test("window.__satchelHook says which origins and whether proofs are made, never the secret", () => {
  const w = inject(fakeWindow(), { proofSecret: secret, origins: ["https://m.shop.com", "satchel://m.shop.com"] });
  assert.deepEqual(w.__satchelHook.origins, ["https://m.shop.com", "satchel://m.shop.com"]);
  assert.equal(w.__satchelHook.proofs, true);
  assert.ok(!JSON.stringify(w.__satchelHook).includes(secret));
  assert.equal(inject(fakeWindow()).__satchelHook.proofs, false);
});
