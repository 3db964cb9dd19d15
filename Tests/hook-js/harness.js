// The hook as HookScript.render assembles it, run against a fake window that records what the page's requests
// became. Each test builds its own window, so no state leaks between tests and node's globals stay untouched.
// HookScriptTests runs this file to check that it renders what HookScript.render does, so these tests run the very
// script Swift ships.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");

const hookFolder = path.join(__dirname, "../../Sources/SatchelEngine/Hook");
// HookScript.files, in its order.
const files = ["core", "proof", "body", "channels", "forms", "cookie", "trial", "bridge"];
const read = (name) => fs.readFileSync(path.join(hookFolder, name + ".js"), "utf8");

function render(configJSON) {
  const features = files.map(read).join("\n");
  // Replacer functions: a `$` in the JavaScript or the JSON must not be read as a replacement pattern.
  return read("wrapper").replace("  // @features\n", () => features).replace("SATCHEL_CONFIG", () => configJSON);
}

const ORIGIN = "https://m.shop.com";
// BodyChannels' and HookScript.Configuration's defaults (HookScriptTests checks they still are).
const defaults = {
  bodyEndpoint: "/_satchel/bodies/", bodyHeader: "X-Satchel-Body", bodyIdHeader: "X-Satchel-Body-Id",
  bodyIdParameter: "SATCHEL_BODY_ID", contentTypeHeader: "X-Satchel-Content-Type", encodingHeader: "X-Satchel-Body-Encoding",
  headerThreshold: 8192, keepaliveHeader: "X-Satchel-Keepalive", messageHandler: "satchelBody", methodHeader: "X-Satchel-Method",
  origins: [], proofHeader: "X-Satchel-Token", proofParameter: "SATCHEL_TOKEN", queryParameter: "POST_DATA",
};
const secret = crypto.randomBytes(32).toString("base64url");

// A window at `url` (an app page unless told otherwise) with fetch, XMLHttpRequest, forms, sendBeacon and, when
// `handlers` names them, web view script message handlers. Everything the hook sends lands in `w.sent`, bodies the
// local server stores in `w.stored`, messages to handlers in `w.messages`. `respond(request)` may answer a fetch
// or an XHR (status, body, headers); the default is 200 "ok", 204 for the body store.
function fakeWindow({ url = ORIGIN + "/app/index.html", handlers = {}, respond } = {}) {
  const page = new URL(url);
  const w = { sent: [], stored: {}, messages: [], errors: [], warnings: [] };
  // Built by hand: node's URL gives a custom scheme the origin "null", WebKit gives satchel://host.
  w.location = { href: page.href, origin: page.protocol + "//" + page.host, protocol: page.protocol, pathname: page.pathname };
  w.crypto = crypto.webcrypto;
  w.console = { error: (e) => w.errors.push(e), warn: (m) => w.warnings.push(m) };
  const answer = (request) => (respond && respond(request)) || (request.url.startsWith(defaultsOr(w, "bodyEndpoint")) ? { status: 204 } : { status: 200, body: "ok" });

  w.fetch = async function (input, init = {}) {
    const request = { via: "fetch", url: String(input instanceof Request ? input.url : input), method: init.method || "GET",
      headers: Object.fromEntries(new Headers(init.headers || (input instanceof Request ? input.headers : undefined))),
      body: await bytes(init.body), keepalive: !!init.keepalive, at: w.sent.length };
    w.sent.push(request);
    const { status, body = null, headers } = answer(request);
    return new Response(status === 204 ? null : body, { status, headers });
  };

  class XMLHttpRequest {
    constructor() { this.listeners = {}; }
    open(method, target, async) { this.request = { via: "xhr", method, url: String(target), headers: {}, async: async !== false }; }
    setRequestHeader(name, value) { this.request.headers[name.toLowerCase()] = String(value); }
    addEventListener(type, listener) { (this.listeners[type] = this.listeners[type] || []).push(listener); }
    getResponseHeader(name) { return (this.responseHeaders || {})[name.toLowerCase()] || null; }
    send(body) {
      const finish = (data) => {
        this.request.body = data;
        w.sent.push(this.request);
        const { status, body: text = "", headers = {} } = answer(this.request);
        this.status = status;
        this.responseText = text;
        this.responseHeaders = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
        (this.listeners.loadend || []).forEach((listener) => listener());
      };
      if (!this.request.async) return finish(typeof body === "string" ? new TextEncoder().encode(body) : null);
      bytes(body).then(finish);
    }
  }
  w.XMLHttpRequest = XMLHttpRequest;

  // Window events (error, unhandledrejection): `w.dispatch(type, event)` runs the listeners as the browser would.
  w.listeners = {};
  w.addEventListener = (type, listener) => { (w.listeners[type] = w.listeners[type] || []).push(listener); };
  w.dispatch = (type, event) => (w.listeners[type] || []).forEach((listener) => listener(event));
  w.navigator = { sendBeacon(target) { w.sent.push({ via: "beacon", url: String(target) }); return true; } };
  w.webkit = { messageHandlers: {} };
  for (const [name, reply] of Object.entries(handlers)) {
    w.webkit.messageHandlers[name] = { postMessage(message) { w.messages.push({ handler: name, message }); return reply(message); } };
  }
  // document.cookie lives on Document.prototype, as in a browser: the hook redefines it there.
  w.Document = function Document() {};
  Object.defineProperty(w.Document.prototype, "cookie", { configurable: true, get() { return "browser's own"; }, set() {} });
  w.document = Object.assign(new w.Document(), { addEventListener(type, listener) { if (type === "submit") w.submitListener = listener; } });
  w.HTMLFormElement = FakeForm;
  FakeForm.prototype.submit = function () {
    // What the browser then sends: a POST (or GET) to the action attribute, whose body WebKit drops.
    w.sent.push({ via: "form", method: (this.attributes.method || "get").toUpperCase(), url: new URL(this.attributes.action || page.href, page.href).href });
  };
  return w;
}
const defaultsOr = (w, key) => (w.config && w.config[key]) || defaults[key];

// A stand-in form: node's FormData cannot read a form element, so FormData below takes the fields (and the submitter)
// from it.
class FakeForm {
  constructor(attributes, fields) { this.attributes = Object.assign({}, attributes); this.fields = fields; }
  get method() { return this.attributes.method || "get"; }
  get enctype() { return this.attributes.enctype || "application/x-www-form-urlencoded"; }
  get action() { return this.attributes.action; }
  getAttribute(name) { return name in this.attributes ? this.attributes[name] : null; }
  setAttribute(name, value) { this.attributes[name] = value; }
  removeAttribute(name) { delete this.attributes[name]; }
}
const NodeFormData = globalThis.FormData;
class FormData extends NodeFormData {
  constructor(form, submitter) {
    super();
    if (form && form.fields) for (const [name, value] of form.fields) this.append(name, value);
    if (submitter && submitter.name) this.append(submitter.name, submitter.value);
  }
}

async function bytes(body) {
  if (body === undefined || body === null) return null;
  if (typeof body === "string") return new TextEncoder().encode(body);
  if (body instanceof Uint8Array) return body;
  return new Uint8Array(await new Response(body).arrayBuffer());
}

// Injects the hook (rendered with `config` over the defaults) into `w`, as a WKUserScript would: the script's free
// names other than window are the page's globals (node's here, but for FormData, which must read FakeForm).
function inject(w, config = {}) {
  w.config = Object.assign({}, defaults, { origins: [ORIGIN] }, config);
  new Function("window", "FormData", render(JSON.stringify(w.config)))(w, FormData);
  return w;
}

// Waits until `w.sent` holds `count` requests (the hook sends asynchronously), then gives them.
async function sentRequests(w, count) {
  for (let i = 0; i < 400 && w.sent.length < count; i++) await new Promise((resolve) => setTimeout(resolve, 2));
  return w.sent;
}

// BodyProof, as docs/formats.md and SatchelCore's BodyProof define it: "<time>.<nonce>.<mac>", the mac being
// HMAC-SHA256 under the secret of "satchel-body-proof/1\n<channel>\n<time>\n<nonce>\n<binding>", base64url.
function checkProof(token, channel, binding, key = secret) {
  const match = /^(\d+)\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/.exec(token || "");
  if (!match) return `not a proof: ${token}`;
  const [, time, nonce, mac] = match;
  if (Math.abs(Date.now() - Number(time)) > 60000) return `proof time ${time} is not now`;
  const expected = crypto.createHmac("sha256", Buffer.from(key, "base64url"))
    .update(`satchel-body-proof/1\n${channel}\n${time}\n${nonce}\n${binding}`).digest("base64url");
  return mac === expected ? null : `mac ${mac}, wanted ${expected}`;
}

module.exports = { render, defaults, secret, ORIGIN, fakeWindow, inject, FakeForm, FormData, sentRequests, checkProof, bytes };

// For HookScriptTests: `render CONFIG-JSON` prints the script, `defaults` the configuration above as JSON.
if (require.main === module) {
  process.stdout.write(process.argv[2] === "render" ? render(process.argv[3]) : JSON.stringify(defaults));
}
