import SatchelCore

/// The page-side half of body restoration: a script injected at document start (a `WKUserScript`, or by
/// `satchel serve --inject-hook`) that rewrites intercepted non-GET requests so that their bodies survive
/// WebKit's hand-over to native code. Only the configuration object at the top varies; the rest is fixed.
///
/// Channels, chosen per request: small text bodies go in a header (`encodeURIComponent`); binary bodies and
/// text above the threshold go to the body store first (the `satchelBody` script message handler in a web
/// view, whose reply acknowledges the store; `POST /_satchel/bodies/<id>` on the local server), and the request
/// carries the id; urlencoded form submissions travel as `POST_DATA` on the action URL when small, through the
/// body store otherwise. GET and HEAD requests and other origins are never touched.
public enum HookScript {
    public struct Configuration: Sendable, Equatable {
        public var channels: BodyChannels
        /// Origins whose requests are rewritten, e.g. `https://m.shop.com`, `satchel://m.shop.com`.
        public var origins: [String]
        /// Text bodies whose encoded form is longer than this go to the body store instead of a header.
        public var headerThreshold: Int
        /// Path of the local server's body store endpoint.
        public var bodyEndpoint: String
        /// Name of the web view's script message handler for bodies.
        public var messageHandler: String

        public init(
            channels: BodyChannels = BodyChannels(), origins: [String] = [], headerThreshold: Int = 8 << 10,
            bodyEndpoint: String = "/_satchel/bodies/", messageHandler: String = "satchelBody"
        ) {
            self.channels = channels
            self.origins = origins
            self.headerThreshold = min(headerThreshold, channels.maxHeaderValueBytes)
            self.bodyEndpoint = bodyEndpoint
            self.messageHandler = messageHandler
        }

        var json: String {
            String(decoding: CanonicalJSON.object([
                "bodyHeader": .string(channels.headerNames.first ?? "X-Satchel-Body"),
                "encodingHeader": .string(channels.encodingHeader),
                "methodHeader": .string(channels.methodHeader),
                "contentTypeHeader": .string(channels.contentTypeHeader),
                "bodyIdHeader": .string(channels.bodyIDHeader),
                "bodyIdParameter": .string(channels.bodyIDParameter),
                "queryParameter": .string(channels.queryParameter),
                "headerThreshold": .integer(Int64(headerThreshold)),
                "origins": .array(origins.map { .string($0) }),
                "bodyEndpoint": .string(bodyEndpoint),
                "messageHandler": .string(messageHandler),
            ]).bytes, as: UTF8.self)
        }
    }

    /// The script with `configuration` filled in.
    public static func render(_ configuration: Configuration) -> String {
        "/* Satchel body hook: keeps request bodies that WebKit drops for intercepted requests. */\n"
            + "(function (config) {\n" + body + "\n})(" + configuration.json + ");\n"
    }

    static let body = #"""
  "use strict";
  var w = typeof window !== "undefined" ? window : globalThis;
  if (w.__satchelHook) return; // safe to inject twice
  w.__satchelHook = { config: config };

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

  // A body as the browser would send it: text (UTF-8) or bytes, with its Content-Type.
  function encodeBody(body, contentType) {
    if (body === null || body === undefined) return Promise.resolve(null);
    if (typeof body === "string") return Promise.resolve({ text: body, type: contentType || "text/plain;charset=UTF-8" });
    if (typeof URLSearchParams !== "undefined" && body instanceof URLSearchParams)
      return Promise.resolve({ text: body.toString(), type: contentType || "application/x-www-form-urlencoded;charset=UTF-8" });
    if ((typeof FormData !== "undefined" && body instanceof FormData) || (typeof Blob !== "undefined" && body instanceof Blob)) {
      // Response serialises FormData exactly as fetch would (multipart with its boundary) and keeps a Blob's type.
      var response = new Response(body);
      var type = contentType || response.headers.get("Content-Type") || "";
      return response.arrayBuffer().then(function (buffer) { return { bytes: new Uint8Array(buffer), type: type }; });
    }
    if (body instanceof ArrayBuffer) return Promise.resolve({ bytes: new Uint8Array(body.slice(0)), type: contentType || "" });
    if (ArrayBuffer.isView(body))
      return Promise.resolve({ bytes: new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)), type: contentType || "" });
    return Promise.resolve({ text: String(body), type: contentType || "text/plain;charset=UTF-8" });
  }

  // Hands a body to native code and resolves once it is stored (the web view's reply, or the server's 204).
  function storeBody(id, encoded, method) {
    var bytes = encoded.bytes || new TextEncoder().encode(encoded.text);
    var handler = w.webkit && w.webkit.messageHandlers && w.webkit.messageHandlers[config.messageHandler];
    if (handler) {
      return Promise.resolve(handler.postMessage({ id: id, base64: base64(bytes), contentType: encoded.type, method: method }));
    }
    if (!originalFetch) return Promise.reject(new Error("satchel: no way to store a request body"));
    return originalFetch(config.bodyEndpoint + id, {
      method: "POST", body: bytes, headers: { "Content-Type": encoded.type || "application/octet-stream", "X-Satchel-Method": method }
    }).then(function (r) { if (!r.ok) throw new Error("satchel: body store refused the body (" + r.status + ")"); });
  }

  // The satchel headers that carry `encoded` for a request of `method`.
  function channelHeaders(method, encoded) {
    var headers = {};
    headers[config.methodHeader] = String(method).toUpperCase();
    if (encoded.type) headers[config.contentTypeHeader] = encoded.type;
    if (encoded.text !== undefined) {
      var value = encodeURIComponent(encoded.text);
      if (value.length <= config.headerThreshold) {
        headers[config.bodyHeader] = value;
        return Promise.resolve(headers);
      }
    }
    var id = randomId();
    return storeBody(id, encoded, String(method).toUpperCase()).then(function () {
      headers[config.bodyIdHeader] = id;
      return headers;
    });
  }

  if (XHR) {
    XHR.prototype.open = function (method, url) {
      this.__satchel = { method: method, url: url, headers: {} };
      return originalOpen.apply(this, arguments);
    };
    XHR.prototype.setRequestHeader = function (name, value) {
      if (this.__satchel) this.__satchel.headers[String(name).toLowerCase()] = value;
      return originalSetRequestHeader.apply(this, arguments);
    };
    XHR.prototype.send = function (body) {
      var state = this.__satchel;
      if (!state || !needsBody(state.method) || body === null || body === undefined || !intercepted(state.url)) {
        return originalSend.apply(this, arguments);
      }
      var xhr = this;
      encodeBody(body, state.headers["content-type"]).then(function (encoded) {
        return channelHeaders(state.method, encoded);
      }).then(function (headers) {
        for (var name in headers) originalSetRequestHeader.call(xhr, name, headers[name]);
        originalSend.call(xhr, null);
      }, function (error) {
        if (w.console) w.console.error(error);
        originalSend.call(xhr, body); // better a request the native side will refuse loudly than none
      });
    };
  }

  if (originalFetch) {
    w.fetch = function (input, init) {
      var request = (typeof Request !== "undefined" && input instanceof Request) ? input : null;
      var url = request ? request.url : String(input);
      var method = (init && init.method) || (request && request.method) || "GET";
      var hasInitBody = init && init.body !== undefined && init.body !== null;
      if (!needsBody(method) || !intercepted(url) || (!hasInitBody && !request)) return originalFetch(input, init);
      var headers = new Headers((init && init.headers) || (request && request.headers) || undefined);
      var bodyPromise = hasInitBody ? encodeBody(init.body, headers.get("Content-Type"))
        : request.clone().arrayBuffer().then(function (buffer) {
            return buffer.byteLength ? { bytes: new Uint8Array(buffer), type: headers.get("Content-Type") || "" } : null;
          });
      return bodyPromise.then(function (encoded) {
        if (!encoded) return originalFetch(input, init);
        return channelHeaders(method, encoded).then(function (extra) {
          for (var name in extra) headers.set(name, extra[name]);
          var next = {};
          for (var key in (init || {})) next[key] = init[key];
          next.method = String(method).toUpperCase();
          next.headers = headers;
          delete next.body;
          if (request) {
            next.credentials = next.credentials || request.credentials;
            next.mode = next.mode || request.mode;
          }
          return originalFetch(url, next);
        });
      });
    };
  }

  // Forms: a small urlencoded form travels as POST_DATA on the action URL; multipart and large forms go to
  // the body store and carry the id. The form is then submitted by the original submit(), which fires no
  // submit event, so this runs once per submission.
  var originalSubmit = w.HTMLFormElement && w.HTMLFormElement.prototype.submit;
  function formAction(form) { return form.getAttribute("action") ? form.action : (w.location ? w.location.href : ""); }
  function withParameter(url, name, value) {
    var hash = url.indexOf("#");
    if (hash >= 0) url = url.substring(0, hash);
    return url + (url.indexOf("?") >= 0 ? "&" : "?") + name + "=" + encodeURIComponent(value);
  }
  function rewriteForm(form, submitter) {
    var method = (submitter && submitter.getAttribute && submitter.getAttribute("formmethod")) || form.method || "get";
    if (String(method).toLowerCase() !== "post" || !intercepted(formAction(form))) return null;
    var data = submitter ? new FormData(form, submitter) : new FormData(form);
    var enctype = (submitter && submitter.getAttribute && submitter.getAttribute("formenctype")) || form.enctype || "";
    var action = formAction(form);
    if (enctype.toLowerCase() !== "multipart/form-data") {
      var text = new URLSearchParams(data).toString();
      if (encodeURIComponent(text).length <= config.headerThreshold) {
        return Promise.resolve(withParameter(action, config.queryParameter, text));
      }
      data = text;
    }
    var id = randomId();
    return encodeBody(data, typeof data === "string" ? "application/x-www-form-urlencoded" : null).then(function (encoded) {
      return storeBody(id, encoded, "POST");
    }).then(function () { return withParameter(action, config.bodyIdParameter, id); });
  }
  function submitRewritten(form, url) {
    var previous = form.getAttribute("action");
    form.setAttribute("action", url);
    try { originalSubmit.call(form); } finally {
      if (previous === null) form.removeAttribute("action"); else form.setAttribute("action", previous);
    }
  }
  if (w.document && w.document.addEventListener && originalSubmit) {
    w.document.addEventListener("submit", function (event) {
      var form = event.target;
      if (event.defaultPrevented || !form || String(form.tagName).toLowerCase() !== "form") return;
      var rewritten = rewriteForm(form, event.submitter);
      if (!rewritten) return;
      event.preventDefault();
      rewritten.then(function (url) { submitRewritten(form, url); }, function (error) { if (w.console) w.console.error(error); });
    }, false);
    // form.submit() fires no submit event; requestSubmit() does, and is handled above.
    w.HTMLFormElement.prototype.submit = function () {
      var form = this;
      var rewritten = rewriteForm(form, null);
      if (!rewritten) return originalSubmit.call(form);
      rewritten.then(function (url) { submitRewritten(form, url); }, function (error) { if (w.console) w.console.error(error); });
    };
  }

  // Beacons cannot carry headers: an intercepted beacon becomes a keepalive fetch with the same body.
  if (w.navigator && w.navigator.sendBeacon && originalFetch) {
    var originalBeacon = w.navigator.sendBeacon.bind(w.navigator);
    w.navigator.sendBeacon = function (url, data) {
      if (!intercepted(url) || data === undefined || data === null) return originalBeacon(url, data);
      w.fetch(url, { method: "POST", body: data, keepalive: true, credentials: "include" }).catch(function () {});
      return true;
    };
  }
"""#
}
