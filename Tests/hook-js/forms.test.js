// forms.js: form submissions, which carry no headers, move their bodies into the action URL or the body store.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { fakeWindow, inject, sentRequests, FakeForm, secret, checkProof } = require("./harness");

function submitEvent(w, form, submitter) {
  const event = { target: form, submitter, defaultPrevented: false, prevented: false, preventDefault() { this.prevented = true; } };
  w.submitListener(event);
  return event;
}

test("a small urlencoded form travels as POST_DATA on the action URL, with its proof", async () => {
  const w = inject(fakeWindow(), { proofSecret: secret });
  const form = new FakeForm({ method: "post", action: "https://m.shop.com/checkout?step=2#top" }, [["name", "Zoë"], ["note", "a\nb"]]);
  assert.equal(submitEvent(w, form, { name: "go", value: "pay", getAttribute: () => null }).prevented, true);
  const [request] = await sentRequests(w, 1);
  const url = new URL(request.url);
  assert.equal(request.method, "POST");
  assert.equal(url.searchParams.get("step"), "2");
  assert.equal(url.searchParams.get("POST_DATA"), "name=Zo%C3%AB&note=a%0D%0Ab&go=pay");
  assert.equal(url.hash, "", "the fragment is dropped");
  const posted = new URLSearchParams(url.search).get("POST_DATA");
  assert.equal(checkProof(url.searchParams.get("SATCHEL_TOKEN"), "form-query", encodeURIComponent(posted)), null);
  assert.deepEqual(form.attributes, { method: "post", action: "https://m.shop.com/checkout?step=2#top" }, "the form's attributes were not put back");
});

test("a multipart form goes to the body store and its action URL carries the id", async () => {
  const w = inject(fakeWindow({ handlers: { satchelBody: () => "ok" } }));
  const form = new FakeForm({ method: "post", action: "https://m.shop.com/upload", enctype: "multipart/form-data" }, [["title", "photo"]]);
  form.submit();
  const [request] = await sentRequests(w, 1);
  const [{ message }] = w.messages;
  assert.equal(new URL(request.url).searchParams.get("SATCHEL_BODY_ID"), message.id);
  assert.equal(message.method, "POST");
  assert.match(message.contentType, /^multipart\/form-data; boundary=/);
  assert.ok(Buffer.from(message.base64, "base64").toString().includes('name="title"\r\n\r\nphoto\r\n'));
});

test("GET forms, forms to other origins and submissions the page prevented are left to the browser", async () => {
  const w = inject(fakeWindow());
  const get = new FakeForm({ method: "get", action: "https://m.shop.com/search" }, [["q", "x"]]);
  const foreign = new FakeForm({ method: "post", action: "https://elsewhere.example/pay" }, [["q", "x"]]);
  assert.equal(submitEvent(w, get).prevented, false);
  assert.equal(submitEvent(w, foreign).prevented, false);
  const prevented = new FakeForm({ method: "post", action: "https://m.shop.com/x" }, [["q", "x"]]);
  const event = { target: prevented, defaultPrevented: true, preventDefault() { throw new Error("prevented twice"); } };
  w.submitListener(event);
  foreign.submit();
  const [request] = await sentRequests(w, 1);
  assert.equal(request.url, "https://elsewhere.example/pay");
  assert.equal(w.sent.length, 1);
});
