/* global XHR, originalOpen, originalSend, originalSetRequestHeader, proof */

// document.cookie on a custom-scheme page, where WebKit keeps no cookies: the page reads a copy of its cookies
// (never the HttpOnly ones), fetched from the app's jar with one synchronous request when first read, and read
// again after any response (it may have set cookies) or when native code says the jar changed. A write goes to
// the jar synchronously, so it is there for the page's next request.
if (config.cookieEndpoint && w.location && !/^https?:$/.test(w.location.protocol) && w.Document && XHR) {
  var cookieCopy = null;
  var forgetCookies = function () { cookieCopy = null; };
  var cookieRequest = function (write) {
    var path = w.location.pathname || "/";
    var xhr = new XHR();
    originalOpen.call(xhr, "GET", config.cookieEndpoint + "?path=" + encodeURIComponent(path), false);
    var token = proof("cookie", write === undefined ? "read\n" + path : "write\n" + path + "\n" + write);
    if (token) originalSetRequestHeader.call(xhr, config.proofHeader, token);
    if (write !== undefined) originalSetRequestHeader.call(xhr, config.cookieHeader, encodeURIComponent(write));
    try { originalSend.call(xhr); } catch (e) { return cookieCopy || ""; }
    if (xhr.status !== 200) return cookieCopy || "";
    var refused = xhr.getResponseHeader("X-Satchel-Cookie-Refused");
    if (refused && w.console) w.console.warn("satchel: cookie not set: " + refused);
    return xhr.responseText;
  };
  Object.defineProperty(w.Document.prototype, "cookie", {
    configurable: true, enumerable: true,
    get: function () {
      if (this !== w.document) return "";
      if (cookieCopy === null) cookieCopy = cookieRequest();
      return cookieCopy;
    },
    set: function (value) {
      if (this !== w.document) return;
      cookieCopy = cookieRequest(String(value));
    },
  });
  w.__satchelHook.cookiesChanged = forgetCookies;
  var cookieFetch = w.fetch;
  if (cookieFetch) {
    w.fetch = function () {
      var pending = cookieFetch.apply(this, arguments);
      pending.then(forgetCookies, forgetCookies);
      return pending;
    };
  }
  var bodySend = XHR.prototype.send;
  XHR.prototype.send = function () {
    this.addEventListener("loadend", forgetCookies);
    return bodySend.apply(this, arguments);
  };
}

