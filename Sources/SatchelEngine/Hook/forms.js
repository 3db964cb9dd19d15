/* global absolute, intercepted, randomId, logError, proof, encodeBody, storeBody */

// Forms: a small urlencoded form travels as POST_DATA on the action URL; multipart and large forms go to
// the body store and carry the id. The form is then submitted by the original submit(), which fires no
// submit event, so this runs once per submission.
//
// A form's own properties cannot be trusted: a control named "action", "method" or "enctype" (a submit
// button called "action" is common) replaces form.action and the rest with the element (DOM clobbering).
// So they are read through HTMLFormElement's getters and Element's attribute methods.
var HTMLForm = w.HTMLFormElement;
var originalSubmit = HTMLForm && HTMLForm.prototype.submit;
var elementMethods = (w.Element && w.Element.prototype) || {};
function formProperty(form, name) {
  var descriptor = Object.getOwnPropertyDescriptor(HTMLForm.prototype, name);
  return descriptor && descriptor.get ? descriptor.get.call(form) : form[name];
}
function attribute(element, name) {
  return (elementMethods.getAttribute || element.getAttribute).call(element, name);
}
function setAttribute(element, name, value) {
  if (value === null) (elementMethods.removeAttribute || element.removeAttribute).call(element, name);
  else (elementMethods.setAttribute || element.setAttribute).call(element, name, value);
}
// The submitter's formaction, formmethod and formenctype override the form's, as in the browser.
function submission(form, submitter) {
  var override = function (name) { return submitter && submitter.getAttribute ? submitter.getAttribute(name) : null; };
  var action = override("formaction");
  return {
    action: action ? (absolute(action) || { href: action }).href : String(formProperty(form, "action") || (w.location ? w.location.href : "")),
    method: String(override("formmethod") || formProperty(form, "method") || "get").toLowerCase(),
    enctype: String(override("formenctype") || formProperty(form, "enctype") || "").toLowerCase(),
  };
}
// The browser's application/x-www-form-urlencoded serialiser: names and values with every line break as
// CRLF (a textarea's value has bare LFs; FormData keeps them, the form submission does not), a file as its
// name. URLSearchParams(FormData) alone would send LFs and "[object File]".
function urlencoded(data) {
  var pairs = [];
  var crlf = function (text) { return String(text).replace(/\r\n|\r|\n/g, "\r\n"); };
  data.forEach(function (value, name) { pairs.push([crlf(name), typeof value === "string" ? crlf(value) : value.name]); });
  return new URLSearchParams(pairs).toString();
}
function withParameter(url, name, value) {
  var hash = url.indexOf("#");
  if (hash >= 0) url = url.substring(0, hash);
  return url + (url.indexOf("?") >= 0 ? "&" : "?") + name + "=" + encodeURIComponent(value);
}
function rewriteForm(form, submitter) {
  var target = submission(form, submitter);
  if (target.method !== "post" || !intercepted(target.action)) return null;
  var data = submitter ? new FormData(form, submitter) : new FormData(form);
  if (target.enctype !== "multipart/form-data") {
    var text = urlencoded(data);
    if (encodeURIComponent(text).length <= config.headerThreshold) {
      var queryUrl = withParameter(target.action, config.queryParameter, text);
      var formProof = proof("form-query", encodeURIComponent(text));
      return Promise.resolve(formProof ? withParameter(queryUrl, config.proofParameter, formProof) : queryUrl);
    }
    data = text;
  }
  var id = randomId();
  return encodeBody(data, typeof data === "string" ? "application/x-www-form-urlencoded" : null).then(function (encoded) {
    return storeBody(id, encoded, "POST");
  }).then(function () {
    var url = withParameter(target.action, config.bodyIdParameter, id);
    var storeProof = proof("body-store", id);
    return storeProof ? withParameter(url, config.proofParameter, storeProof) : url;
  });
}
// Submits to the rewritten URL as a POST (the submitter may have been what made it one), then puts the
// form's attributes back.
function submitRewritten(form, url) {
  var previous = { action: attribute(form, "action"), method: attribute(form, "method") };
  setAttribute(form, "action", url);
  setAttribute(form, "method", "post");
  try { originalSubmit.call(form); } finally {
    setAttribute(form, "action", previous.action);
    setAttribute(form, "method", previous.method);
  }
}
if (w.document && w.document.addEventListener && originalSubmit) {
  w.document.addEventListener("submit", function (event) {
    var form = event.target;
    if (event.defaultPrevented || !(form instanceof HTMLForm)) return;
    var rewritten = rewriteForm(form, event.submitter);
    if (!rewritten) return;
    event.preventDefault();
    rewritten.then(function (url) { submitRewritten(form, url); }, logError);
  }, false);
  // form.submit() fires no submit event; requestSubmit() does, and is handled above.
  HTMLForm.prototype.submit = function () {
    var form = this;
    var rewritten = rewriteForm(form, null);
    if (!rewritten) return originalSubmit.call(form);
    rewritten.then(function (url) { submitRewritten(form, url); }, logError);
  };
}

