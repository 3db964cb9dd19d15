// cookie.js: document.cookie on a custom-scheme page, read and written through the app's cookie jar.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { fakeWindow, inject, sentRequests, secret, checkProof } = require("./harness");

const PAGE = "satchel://m.shop.com/account/index.html";
const cookies = { cookieEndpoint: "/_satchel/cookies", cookieHeader: "X-Satchel-Cookie", origins: ["satchel://m.shop.com"] };

// A window whose jar answers reads with `jar` and takes writes into it, like the native endpoint.
function cookiePage(jar = { value: "a=1" }, status = 200) {
  const w = fakeWindow({
    url: PAGE,
    respond(request) {
      if (!request.url.startsWith("/_satchel/cookies")) return null;
      const write = request.headers["x-satchel-cookie"];
      if (write) jar.value = jar.value ? jar.value + "; " + decodeURIComponent(write).split(";")[0] : decodeURIComponent(write).split(";")[0];
      return { status, body: jar.value, headers: write && write.includes("Secure") ? { "X-Satchel-Cookie-Refused": "Secure on satchel:" } : {} };
    },
  });
  return inject(w, Object.assign({ proofSecret: secret }, cookies));
}

test("the first read asks the jar once, synchronously, for the page's path, with a proof", () => {
  const w = cookiePage();
  assert.equal(w.document.cookie, "a=1");
  assert.equal(w.document.cookie, "a=1");
  assert.equal(w.sent.length, 1, "the copy was not kept");
  const [read] = w.sent;
  assert.equal(read.method, "GET");
  assert.equal(read.async, false);
  assert.equal(read.url, "/_satchel/cookies?path=" + encodeURIComponent("/account/index.html"));
  assert.equal(read.headers["x-satchel-cookie"], undefined);
  assert.equal(checkProof(read.headers["x-satchel-token"], "cookie", "read\n/account/index.html"), null);
});

test("a write goes to the jar at once in the cookie header, and the page reads the jar's answer", () => {
  const w = cookiePage();
  w.document.cookie = "b=2; Path=/";
  const [write] = w.sent;
  assert.equal(write.headers["x-satchel-cookie"], encodeURIComponent("b=2; Path=/"));
  assert.equal(checkProof(write.headers["x-satchel-token"], "cookie", "write\n/account/index.html\nb=2; Path=/"), null);
  assert.equal(w.document.cookie, "a=1; b=2");
  assert.equal(w.sent.length, 1, "the write's answer is the new copy");
  w.document.cookie = "c=3; Secure";
  assert.deepEqual(w.warnings, ["satchel: cookie not set: Secure on satchel:"]);
});

test("the copy is read again after a response (it may have set cookies) and when native code says the jar changed", async () => {
  const jar = { value: "a=1" };
  const w = cookiePage(jar);
  assert.equal(w.document.cookie, "a=1");
  jar.value = "a=2";
  assert.equal(w.document.cookie, "a=1");
  await w.fetch("satchel://m.shop.com/api", { method: "POST", body: "x" });
  assert.equal(w.document.cookie, "a=2");
  jar.value = "a=3";
  const xhr = new w.XMLHttpRequest();
  xhr.open("GET", "satchel://m.shop.com/api");
  xhr.send();
  await sentRequests(w, 4);
  assert.equal(w.document.cookie, "a=3");
  jar.value = "a=4";
  w.__satchelHook.cookiesChanged();
  assert.equal(w.document.cookie, "a=4");
});

test("a jar that fails keeps the last copy; another document's cookie is empty", () => {
  const w = cookiePage({ value: "a=1" }, 500);
  assert.equal(w.document.cookie, "");
  const other = new w.Document();
  assert.equal(other.cookie, "");
  other.cookie = "x=1";
  assert.equal(w.sent.length, 1, "another document wrote to the jar");
});

test("on an http(s) page, or without a cookie endpoint, document.cookie stays the browser's", () => {
  const overHTTP = inject(fakeWindow(), Object.assign({}, cookies, { origins: ["https://m.shop.com"] }));
  assert.equal(overHTTP.document.cookie, "browser's own");
  const without = inject(fakeWindow({ url: PAGE }), { origins: ["satchel://m.shop.com"] });
  assert.equal(without.document.cookie, "browser's own");
  assert.equal(overHTTP.sent.length + without.sent.length, 0);
});
