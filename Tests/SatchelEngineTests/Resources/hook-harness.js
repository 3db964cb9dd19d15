// Runs the Satchel body hook under node with stand-ins for the browser objects it touches, makes the kinds
// of request a page makes, and prints what reached the "network" (after the hook) and what the page meant
// to send. The Swift test restores each request with BodyRestorer and compares. Usage: node harness.js hook.js
"use strict";
const fs = require("fs");
const hookSource = fs.readFileSync(process.argv[2], "utf8");
const sent = [];     // requests as the native side sees them
const stored = {};   // bodies handed to the body store
const b64 = (bytes) => Buffer.from(bytes).toString("base64");

globalThis.window = globalThis;
globalThis.location = { href: "https://m.shop.com/app/index.html" };

async function bodyBytes(body) {
  if (body === undefined || body === null) return null;
  if (typeof body === "string") return new TextEncoder().encode(body);
  if (body instanceof Uint8Array) return body;
  return new Uint8Array(await new Response(body).arrayBuffer());
}

const realFetch = globalThis.fetch;
globalThis.fetch = async function (input, init) {
  const url = String(input instanceof Request ? input.url : input);
  const headers = new Headers((init && init.headers) || (input instanceof Request ? input.headers : undefined));
  const body = await bodyBytes(init && init.body);
  if (url.startsWith("/_satchel/bodies/")) {
    stored[url.substring("/_satchel/bodies/".length)] = { base64: b64(body), contentType: headers.get("Content-Type"), method: headers.get("X-Satchel-Method") };
    return new Response(null, { status: 204 });
  }
  sent.push({ via: "fetch", method: (init && init.method) || "GET", url, headers: [...headers.entries()], body: body ? b64(body) : null, keepalive: !!(init && init.keepalive) });
  return new Response("ok");
};

class FakeXHR {
  open(method, url) { this.req = { via: "xhr", method, url, headers: [] }; }
  setRequestHeader(name, value) { this.req.headers.push([name.toLowerCase(), value]); }
  send(body) {
    bodyBytes(body).then((bytes) => { this.req.body = bytes ? b64(bytes) : null; sent.push(this.req); });
  }
}
globalThis.XMLHttpRequest = FakeXHR;

// Forms: node's FormData cannot read a form element, so the stand-in form carries its fields.
const RealFormData = globalThis.FormData;
globalThis.FormData = class extends RealFormData {
  constructor(form, submitter) {
    super();
    if (form && form.fields) for (const [name, value, filename] of form.fields) filename ? this.append(name, value, filename) : this.append(name, value);
    if (submitter && submitter.name) this.append(submitter.name, submitter.value);
  }
};
// The WebKitGTK stand-in: its Response cannot read a FormData that holds a File or Blob ("Unable to read form data
// blob"), so neither can fetch or XHR; the hook must then write the multipart body itself.
const RealResponse = globalThis.Response;
let formDataBlobsUnreadable = false;
globalThis.Response = class extends RealResponse {
  constructor(body, init) {
    super(body, init);
    this.unreadable = formDataBlobsUnreadable && body instanceof RealFormData && [...body.values()].some((v) => typeof v !== "string");
  }
  arrayBuffer() { return this.unreadable ? Promise.reject(new Error("InvalidStateError: Unable to read form data blob")) : super.arrayBuffer(); }
};
let submitListener = null;
globalThis.document = { addEventListener(type, listener) { if (type === "submit") submitListener = listener; } };
class FakeForm {
  constructor(attributes, fields) { this.attributes = Object.assign({}, attributes); this.fields = fields; this.tagName = "FORM"; }
  get method() { return this.attributes.method || "get"; }
  get enctype() { return this.attributes.enctype || "application/x-www-form-urlencoded"; }
  get action() { return new URL(this.attributes.action || location.href, location.href).href; }
  getAttribute(name) { return name in this.attributes ? this.attributes[name] : null; }
  setAttribute(name, value) { this.attributes[name] = value; }
  removeAttribute(name) { delete this.attributes[name]; }
}
FakeForm.prototype.submit = function () {
  // What the browser then sends: a POST to the (rewritten) action, whose body WebKit drops. Read from the
  // attribute, as a browser does: `this.action` may be a clobbering control.
  sent.push({ via: "form", method: (this.attributes.method || "get").toUpperCase(), url: new URL(this.attributes.action || location.href, location.href).href, headers: [], body: null });
};
globalThis.HTMLFormElement = FakeForm;
globalThis.navigator = { sendBeacon(url, data) { sent.push({ via: "beacon-native", url }); return true; } };

// Inject twice: the second must do nothing.
eval(hookSource);
eval(hookSource);

const intended = []; // what each case meant to send: [label, base64 | null, contentType | null]
const API = "https://m.shop.com/api/echo";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function run() {
  const unicode = JSON.stringify({ name: "Zoë Café ☕", emoji: "😀👍", cjk: "名前", quote: "\"'&=+%" });
  const bigText = "x".repeat(20000) + "é";
  const binary = new Uint8Array(256).map((_, i) => i);
  // Names and file names with quotes and line breaks, string values with bare LFs and CRs, a file without a type: node's
  // own serialiser (undici, which follows the HTML standard) is the oracle for the hook's.
  const awkwardFormData = () => {
    const data = new FormData();
    data.append("caption", "Ünïcode\nline two\rline three");
    data.append("we\"ird\r\nname", "x");
    data.append("file", new Blob([binary], { type: "" }), "da\"ta\n.bin");
    data.append("photo", new Blob([binary.subarray(0, 10)], { type: "image/png" }), "p.png");
    return data;
  };
  const native = new RealResponse(awkwardFormData());
  const nativeType = native.headers.get("Content-Type");
  const nativeMultipart = new Uint8Array(await native.arrayBuffer());
  const cases = [
    ["xhr text", () => { const x = new XMLHttpRequest(); x.open("POST", API); x.send("hello world"); }, new TextEncoder().encode("hello world"), "text/plain;charset=UTF-8"],
    ["xhr json unicode", () => { const x = new XMLHttpRequest(); x.open("POST", API); x.setRequestHeader("Content-Type", "application/json"); x.send(unicode); }, new TextEncoder().encode(unicode), "application/json"],
    ["xhr big text", () => { const x = new XMLHttpRequest(); x.open("POST", API); x.send(bigText); }, new TextEncoder().encode(bigText), "text/plain;charset=UTF-8"],
    ["xhr arraybuffer", () => { const x = new XMLHttpRequest(); x.open("POST", API); x.send(binary.buffer); }, binary, ""],
    ["xhr put typed array view", () => { const x = new XMLHttpRequest(); x.open("PUT", API); x.send(binary.subarray(10, 20)); }, binary.subarray(10, 20), ""],
    ["fetch urlsearchparams", () => fetch(API, { method: "POST", body: new URLSearchParams([["q", "a b&c"], ["z", "é"]]) }), new TextEncoder().encode("q=a+b%26c&z=%C3%A9"), "application/x-www-form-urlencoded;charset=UTF-8"],
    ["fetch request object", () => fetch(new Request(API, { method: "POST", body: "from a Request", headers: { "Content-Type": "text/x-custom" } })), new TextEncoder().encode("from a Request"), "text/x-custom"],
    ["fetch blob", () => fetch(API, { method: "POST", body: new Blob([binary], { type: "image/png" }) }), binary, "image/png"],
    ["fetch empty string", () => fetch(API, { method: "POST", body: "" }), new Uint8Array(0), "text/plain;charset=UTF-8"],
    ["fetch 5 MB", () => fetch(API, { method: "POST", body: new Uint8Array(5 << 20).map((_, i) => i * 7) }), new Uint8Array(5 << 20).map((_, i) => i * 7), ""],
    ["beacon", () => navigator.sendBeacon(API, "beacon payload"), new TextEncoder().encode("beacon payload"), "text/plain;charset=UTF-8"],
    ["form urlencoded submit event", () => {
      const form = new FakeForm({ method: "post", action: "/checkout?step=2" }, [["name", "Zoë Müller"], ["note", "1+1=2 & more"]]);
      let prevented = false;
      submitListener({ target: form, submitter: { name: "go", value: "pay" }, preventDefault() { prevented = true; }, defaultPrevented: false });
      if (!prevented) throw new Error("submit not intercepted");
    }, new TextEncoder().encode(new URLSearchParams([["name", "Zoë Müller"], ["note", "1+1=2 & more"], ["go", "pay"]]).toString()), "application/x-www-form-urlencoded"],
    ["form clobbered, line breaks", () => {
      // Controls named action, method and enctype replace those form properties with elements (DOM clobbering);
      // a textarea's bare LFs are sent as CRLF by the browser's urlencoded serialiser.
      const form = new FakeForm({ method: "post", action: "/checkout" }, [["note", "one\ntwo\r\nthree\rfour"], ["method", "card"]]);
      for (const name of ["action", "method", "enctype"]) Object.defineProperty(form, name, { value: { tagName: "INPUT", name } });
      let prevented = false;
      submitListener({ target: form, submitter: { name: "action", value: "pay" }, preventDefault() { prevented = true; }, defaultPrevented: false });
      if (!prevented) throw new Error("submit not intercepted");
    }, new TextEncoder().encode("note=one%0D%0Atwo%0D%0Athree%0D%0Afour&method=card&action=pay"), "application/x-www-form-urlencoded"],
    ["form multipart submit()", () => {
      const form = new FakeForm({ method: "post", action: "/upload", enctype: "multipart/form-data" }, [["title", "photo"], ["file", new Blob([binary], { type: "image/png" }), "pic.png"]]);
      form.submit();
    }, null, "multipart/form-data"],
    ["fetch formdata file", () => { const fd = new FormData(); fd.append("caption", "Ünïcode"); fd.append("file", new Blob([binary], { type: "application/octet-stream" }), "data.bin"); return fetch(API, { method: "POST", body: fd }); }, null, "multipart/form-data"],
    ["fetch formdata file, WebKitGTK serialiser", async () => {
      formDataBlobsUnreadable = true;
      try { await fetch(API, { method: "POST", body: awkwardFormData() }); } finally { formDataBlobsUnreadable = false; }
    }, nativeMultipart, nativeType],
    ["xhr get untouched", () => { const x = new XMLHttpRequest(); x.open("GET", API + "?q=1"); x.send(); }, null, null],
    ["other origin untouched", () => fetch("https://elsewhere.example/api", { method: "POST", body: "keep me" }), null, null],
  ];
  for (const [label, action, bytes, type] of cases) {
    const before = sent.length;
    await action();
    for (let i = 0; i < 200 && sent.length === before; i++) await sleep(5);
    if (sent.length !== before + 1) throw new Error(label + ": expected one request, saw " + (sent.length - before));
    sent[sent.length - 1].label = label;
    intended.push([label, bytes ? b64(bytes) : null, type]);
  }
  process.stdout.write(JSON.stringify({ sent, stored, intended }));
}
run().catch((e) => { console.error(e); process.exit(1); });
