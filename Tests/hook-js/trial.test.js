// trial.js: the page's health signals to the judge of a release on trial.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { fakeWindow, inject, secret, checkProof, ORIGIN } = require("./harness");

const judged = (options = {}) => {
  const w = fakeWindow(Object.assign({ handlers: { satchelTrial: () => undefined, satchelBridge: () => "{}" } }, options));
  return inject(w, { proofSecret: secret, trialHandler: "satchelTrial", bridgeHandler: "satchelBridge" });
};
const signals = (w) => w.messages.filter((m) => m.handler === "satchelTrial").map((m) => m.message);

test("an uncaught error is sent with its message, its script and a proof over both", () => {
  const w = judged();
  w.dispatch("error", { target: w, message: "TypeError: boom", filename: ORIGIN + "/app.js", error: new TypeError("boom") });
  const [signal] = signals(w);
  assert.equal(signal.kind, "error");
  assert.equal(signal.message, "TypeError: boom");
  assert.equal(signal.source, ORIGIN + "/app.js");
  assert.equal(signal.network, false);
  assert.equal(checkProof(signal.token, "trial", "error\nTypeError: boom\n" + ORIGIN + "/app.js\n0"), null);
});

test("a cross-origin 'Script error.' is sent as it is, with no script: native code does not count it", () => {
  const w = judged();
  w.dispatch("error", { target: w, message: "Script error.", filename: "" });
  assert.deepEqual(signals(w).map((s) => [s.kind, s.message, s.source]), [["error", "Script error.", ""]]);
});

test("a rejection from a failed fetch is marked network; one the page's code made is not, and names its script", async () => {
  const w = judged({ respond: () => { throw new TypeError("Load failed"); } });
  let failed;
  await w.fetch("https://api.shop.com/cart").catch((error) => { failed = error; });
  assert.ok(failed instanceof TypeError);
  w.dispatch("unhandledrejection", { reason: failed });
  const own = new Error("cart is empty");
  own.stack = "Error: cart is empty\n    at load (" + ORIGIN + "/js/app.js:12:9)\n    at " + ORIGIN + "/js/app.js:30:1";
  w.dispatch("unhandledrejection", { reason: own });
  w.dispatch("unhandledrejection", { reason: "plain text" });
  const sent = signals(w);
  assert.deepEqual(sent.map((s) => [s.kind, s.network]), [["rejection", true], ["rejection", false], ["rejection", false]]);
  assert.equal(sent[0].message, "TypeError: Load failed");
  assert.equal(sent[1].message, "Error: cart is empty");
  assert.equal(sent[1].source, ORIGIN + "/js/app.js");
  assert.equal(sent[2].message, "plain text");
  assert.equal(sent[2].source, "");
});

test("a rejection carrying an XMLHttpRequest (axios's shape) is marked network", () => {
  const w = judged();
  const request = new w.XMLHttpRequest();
  w.dispatch("unhandledrejection", { reason: Object.assign(new Error("Network Error"), { request }) });
  w.dispatch("unhandledrejection", { reason: { target: request } });
  assert.deepEqual(signals(w).map((s) => s.network), [true, true]);
});

test("a script or stylesheet that failed to load is a resource signal; an image is not", () => {
  const w = judged();
  w.dispatch("error", { target: { tagName: "SCRIPT", src: ORIGIN + "/js/missing.js" } });
  w.dispatch("error", { target: { tagName: "LINK", rel: "stylesheet", href: ORIGIN + "/css/missing.css" } });
  w.dispatch("error", { target: { tagName: "IMG", src: ORIGIN + "/missing.png" } });
  const sent = signals(w);
  assert.deepEqual(sent.map((s) => [s.kind, s.source]), [["resource", ORIGIN + "/js/missing.js"], ["resource", ORIGIN + "/css/missing.css"], ["error", ""]]);
});

test("window.satchel.ready() sends ready; without a trial handler nothing is sent and nothing listens to the page", async () => {
  const w = judged();
  w.satchel.ready();
  assert.deepEqual(signals(w).map((s) => s.kind), ["ready"]);
  const plain = inject(fakeWindow({ handlers: { satchelBridge: () => "{}" } }), { proofSecret: secret, bridgeHandler: "satchelBridge" });
  plain.satchel.ready();
  assert.equal(plain.messages.length, 0);
  assert.deepEqual(plain.listeners, {});
});

test("the first contentful paint is sent once, from the paint observer", () => {
  let observer;
  const w = fakeWindow({ handlers: { satchelTrial: () => undefined } });
  w.PerformanceObserver = class {
    constructor(callback) { this.callback = callback; observer = this; }
    observe(options) { this.options = options; }
  };
  inject(w, { proofSecret: secret, trialHandler: "satchelTrial" });
  assert.deepEqual(observer.options, { type: "paint", buffered: true });
  observer.callback({ getEntries: () => [{ name: "first-paint" }, { name: "first-contentful-paint" }] });
  assert.deepEqual(signals(w).map((s) => s.kind), ["paint"]);
});

test("an app frame inside the page sends its errors but not its paint", () => {
  let observed = false;
  const w = fakeWindow({ handlers: { satchelTrial: () => undefined } });
  w.top = {};
  w.PerformanceObserver = class { constructor() { observed = true; } observe() {} };
  inject(w, { proofSecret: secret, trialHandler: "satchelTrial" });
  assert.equal(observed, false);
  w.dispatch("error", { target: w, message: "Error: in the frame", filename: ORIGIN + "/frame.js" });
  assert.deepEqual(signals(w).map((s) => s.kind), ["error"]);
});

test("reading the body of an error answer (an API that is down) rejects with an error marked network; of a good one, not", async () => {
  const saved = Object.fromEntries(["json", "text", "arrayBuffer", "blob", "formData"].map((name) => [name, Response.prototype[name]]));
  try {
    const w = fakeWindow({
      handlers: { satchelTrial: () => undefined },
      respond: (request) => (request.url.endsWith("/down") ? { status: 502, body: "<h1>upstream down</h1>" } : { status: 200, body: "not json" }),
    });
    w.Response = Response;
    inject(w, { proofSecret: secret, trialHandler: "satchelTrial" });
    let down, good;
    await w.fetch(ORIGIN + "/api/down").then((r) => r.json()).catch((e) => { down = e; });
    await w.fetch(ORIGIN + "/api/good").then((r) => r.json()).catch((e) => { good = e; });
    assert.ok(down instanceof SyntaxError && good instanceof SyntaxError);
    w.dispatch("unhandledrejection", { reason: down });
    w.dispatch("unhandledrejection", { reason: good });
    assert.deepEqual(signals(w).map((s) => [s.kind, s.network]), [["rejection", true], ["rejection", false]]);
  } finally {
    Object.assign(Response.prototype, saved);
  }
});

test("a page shown again from the back-forward cache says it painted (and is ready, if it said so before)", () => {
  const w = judged();
  w.dispatch("pageshow", { persisted: false });
  assert.deepEqual(signals(w), []);
  w.satchel.ready();
  w.dispatch("pageshow", { persisted: true });
  assert.deepEqual(signals(w).map((s) => s.kind), ["ready", "paint", "ready"]);
});
