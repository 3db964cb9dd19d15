// What every feature shares, in the hook's one closure: the page's own fetch and XMLHttpRequest, taken before any
// feature replaces them, and small helpers. The feature files follow this one in that closure (HookScript.files);
// eslint checks each file alone, so each names what it takes from earlier files (global) and gives (exported).
/* exported proofKey, XHR, originalFetch, originalOpen, originalSend, originalSetRequestHeader, absolute, intercepted,
   needsBody, randomId, base64, base64url, logError */

// The secret stays in this closure: nothing on window exposes it.
var proofKey = config.proofSecret ? fromBase64url(config.proofSecret) : null;
w.__satchelHook = { origins: config.origins.slice(), proofs: !!proofKey };

var originalFetch = w.fetch ? w.fetch.bind(w) : null;
var XHR = w.XMLHttpRequest;
var originalOpen = XHR && XHR.prototype.open;
var originalSend = XHR && XHR.prototype.send;
var originalSetRequestHeader = XHR && XHR.prototype.setRequestHeader;

function absolute(url) {
  try { return new URL(String(url), w.location ? w.location.href : undefined); } catch (e) { return null; }
}
function intercepted(url) {
  var parsed = absolute(url);
  if (!parsed) return false;
  var origin = parsed.protocol + "//" + parsed.host;
  return config.origins.indexOf(origin) >= 0;
}
function needsBody(method) {
  var m = String(method || "GET").toUpperCase();
  return m !== "GET" && m !== "HEAD";
}
function randomId() {
  var bytes = new Uint8Array(16);
  (w.crypto || globalThis.crypto).getRandomValues(bytes);
  return Array.prototype.map.call(bytes, function (b) { return ("0" + b.toString(16)).slice(-2); }).join("");
}
function base64(bytes) {
  var text = "";
  for (var i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(text);
}
function base64url(bytes) { return base64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, ""); }
function fromBase64url(text) {
  var binary = atob(String(text).replace(/-/g, "+").replace(/_/g, "/"));
  var bytes = new Uint8Array(binary.length);
  for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
// Where the hook reports what went wrong: the page's console. Nothing leaves the page.
function logError(error) {
  if (w.console) w.console.error(error);
}
