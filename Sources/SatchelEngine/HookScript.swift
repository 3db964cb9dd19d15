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
                "keepaliveHeader": .string(channels.keepaliveHeader),
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
      var serialised;
      try {
        var response = new Response(body);
        var type = contentType || response.headers.get("Content-Type") || "";
        serialised = response.arrayBuffer().then(function (buffer) { return { bytes: new Uint8Array(buffer), type: type }; });
      } catch (error) {
        serialised = Promise.reject(error);
      }
      if (!(body instanceof FormData)) return serialised;
      return serialised.catch(function () { return multipartBody(body); });
    }
    if (body instanceof ArrayBuffer) return Promise.resolve({ bytes: new Uint8Array(body.slice(0)), type: contentType || "" });
    if (ArrayBuffer.isView(body))
      return Promise.resolve({ bytes: new Uint8Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength)), type: contentType || "" });
    return Promise.resolve({ text: String(body), type: contentType || "text/plain;charset=UTF-8" });
  }

  // multipart/form-data written here, by the HTML standard's rules: WebKitGTK cannot serialise a FormData that holds
  // a File or Blob (new Response(formData).arrayBuffer(), and so fetch and XHR, reject with "Unable to read form data
  // blob"), while each file can still be read on its own. Line breaks in names and string values become CRLF (not in
  // file names); in names and file names CR, LF and '"' are then escaped as %0D, %0A and %22; a file part's type is the
  // file's, else application/octet-stream. The boundary holds 128 random bits, so, as in browsers, the parts are not
  // searched for it.
  function multipartBody(data) {
    var crlf = function (text) { return String(text).replace(/\r\n|\r|\n/g, "\r\n"); };
    var quoted = function (text) { return String(text).replace(/\r/g, "%0D").replace(/\n/g, "%0A").replace(/"/g, "%22"); };
    var entries = [];
    data.forEach(function (value, name) { entries.push([name, value]); });
    return Promise.all(entries.map(function (entry) {
      return typeof entry[1] === "string" ? null : entry[1].arrayBuffer().then(function (buffer) { return new Uint8Array(buffer); });
    })).then(function (files) {
      var encoder = new TextEncoder();
      var boundary = "----SatchelFormBoundary" + randomId();
      var pieces = [];
      entries.forEach(function (entry, i) {
        var head = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + quoted(crlf(entry[0])) + "\"";
        if (typeof entry[1] === "string") {
          pieces.push(encoder.encode(head + "\r\n\r\n" + crlf(entry[1]) + "\r\n"));
        } else {
          pieces.push(encoder.encode(head + "; filename=\"" + quoted(entry[1].name) + "\"\r\nContent-Type: " + (entry[1].type || "application/octet-stream") + "\r\n\r\n"));
          pieces.push(files[i]);
          pieces.push(encoder.encode("\r\n"));
        }
      });
      pieces.push(encoder.encode("--" + boundary + "--\r\n"));
      var bytes = new Uint8Array(pieces.reduce(function (sum, piece) { return sum + piece.length; }, 0));
      pieces.reduce(function (offset, piece) { bytes.set(piece, offset); return offset + piece.length; }, 0);
      // A Content-Type the page set itself names its own boundary, which these bytes do not use.
      return { bytes: bytes, type: "multipart/form-data; boundary=" + boundary };
    });
  }

  // Hands a body to native code and resolves once it is stored (the web view's reply, or the server's 204).
  function storeBody(id, encoded, method) {
    var bytes = encoded.bytes || new TextEncoder().encode(encoded.text);
    var handler = w.webkit && w.webkit.messageHandlers && w.webkit.messageHandlers[config.messageHandler];
    // A body without a type stays without one: inventing application/octet-stream here would reach the origin
    // as a Content-Type the page never sent.
    if (handler) {
      return Promise.resolve(handler.postMessage({ id: id, base64: base64(bytes), contentType: encoded.type || null, method: method }));
    }
    if (!originalFetch) return Promise.reject(new Error("satchel: no way to store a request body"));
    var storeHeaders = { "X-Satchel-Method": method };
    if (encoded.type) storeHeaders["Content-Type"] = encoded.type;
    return originalFetch(config.bodyEndpoint + id, { method: "POST", body: bytes, headers: storeHeaders })
      .then(function (r) { if (!r.ok) throw new Error("satchel: body store refused the body (" + r.status + ")"); });
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
          // keepalive (a beacon, a fetch made as the page leaves) must outlive the page: the native side is told,
          // since WebKit stops a custom-scheme load with its frame whatever keepalive says.
          if (next.keepalive || (request && request.keepalive)) headers.set(config.keepaliveHeader, "1");
          next.headers = headers;
          delete next.body;
          if (request) {
            next.credentials = next.credentials || request.credentials;
            next.mode = next.mode || request.mode;
            next.keepalive = next.keepalive || request.keepalive;
          }
          return originalFetch(url, next);
        });
      });
    };
  }

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
        return Promise.resolve(withParameter(target.action, config.queryParameter, text));
      }
      data = text;
    }
    var id = randomId();
    return encodeBody(data, typeof data === "string" ? "application/x-www-form-urlencoded" : null).then(function (encoded) {
      return storeBody(id, encoded, "POST");
    }).then(function () { return withParameter(target.action, config.bodyIdParameter, id); });
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
      rewritten.then(function (url) { submitRewritten(form, url); }, function (error) { if (w.console) w.console.error(error); });
    }, false);
    // form.submit() fires no submit event; requestSubmit() does, and is handled above.
    HTMLForm.prototype.submit = function () {
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
