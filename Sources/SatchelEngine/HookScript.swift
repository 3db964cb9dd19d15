import SatchelCore
import SatchelHTTP

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
        /// The launch's secret, from which the hook makes a ``BodyProof`` for every body it moves; nil makes a
        /// hook without proofs (only for an engine configured with ``BodyProofPolicy/notRequired``).
        public var proofSecret: BodyProofSecret?
        /// Where a custom-scheme page's `document.cookie` is read and written (``PageCookies``); nil: the hook
        /// leaves `document.cookie` alone (a page served over http has the browser's own).
        public var cookieEndpoint: String?
        /// The script message handler of the JS bridge (`window.satchel`); nil: no bridge.
        public var bridgeHandler: String?
        /// How long a bridge call waits for its answer.
        public var bridgeTimeout: Duration

        public init(
            channels: BodyChannels = BodyChannels(), origins: [String] = [], headerThreshold: Int = 8 << 10,
            bodyEndpoint: String = "/_satchel/bodies/", messageHandler: String = "satchelBody", proofSecret: BodyProofSecret? = nil,
            cookieEndpoint: String? = nil, bridgeHandler: String? = nil, bridgeTimeout: Duration = .seconds(30)
        ) {
            self.cookieEndpoint = cookieEndpoint
            self.bridgeHandler = bridgeHandler
            self.bridgeTimeout = bridgeTimeout
            self.channels = channels
            self.origins = origins
            self.headerThreshold = min(headerThreshold, channels.maxHeaderValueBytes)
            self.bodyEndpoint = bodyEndpoint
            self.messageHandler = messageHandler
            self.proofSecret = proofSecret
        }

        var json: String {
            var object: [String: CanonicalJSON] = [
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
                "proofHeader": .string(channels.proofHeader),
                "proofParameter": .string(channels.proofParameter),
            ]
            if let proofSecret { object["proofSecret"] = .string(proofSecret.text) }
            if let cookieEndpoint {
                object["cookieEndpoint"] = .string(cookieEndpoint)
                object["cookieHeader"] = .string(PageCookies.writeHeader)
            }
            if let bridgeHandler {
                object["bridgeHandler"] = .string(bridgeHandler)
                object["bridgeTimeoutMs"] = .integer(bridgeTimeout.components.seconds * 1000 + bridgeTimeout.components.attoseconds / 1_000_000_000_000_000)
            }
            return String(decoding: CanonicalJSON.object(object).bytes, as: UTF8.self)
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
  // Only on the app's own pages: on any other origin (a site the web view navigated to) the hook does nothing,
  // so a foreign page cannot make it prove a body for the app's origins.
  if (w.location && w.location.origin && config.origins.indexOf(w.location.origin) < 0) return;
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

  // Proof of origin (Satchel's BodyProof): every body this hook moves carries "<time>.<nonce>.<mac>", the mac
  // being HMAC-SHA256 under the launch's secret of what the body is, so the native side restores only bodies
  // this page's hook sent, and an <img src>, a link or another site cannot forge one. SHA-256 is written out
  // here because crypto.subtle exists only in secure contexts (a page served over http is not one).
  var K = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ];
  function rotr(x, n) { return (x >>> n) | (x << (32 - n)); }
  function sha256(bytes) {
    var H = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    var padded = new Uint8Array(((bytes.length + 72) >> 6) << 6);
    padded.set(bytes);
    padded[bytes.length] = 0x80;
    var view = new DataView(padded.buffer);
    view.setUint32(padded.length - 8, Math.floor(bytes.length / 0x20000000));
    view.setUint32(padded.length - 4, (bytes.length << 3) >>> 0);
    var W = new Array(64);
    for (var offset = 0; offset < padded.length; offset += 64) {
      for (var t = 0; t < 16; t++) W[t] = view.getUint32(offset + t * 4);
      for (t = 16; t < 64; t++) {
        var s0 = rotr(W[t - 15], 7) ^ rotr(W[t - 15], 18) ^ (W[t - 15] >>> 3);
        var s1 = rotr(W[t - 2], 17) ^ rotr(W[t - 2], 19) ^ (W[t - 2] >>> 10);
        W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
      }
      var a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
      for (t = 0; t < 64; t++) {
        var t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + W[t]) | 0;
        var t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
        h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      H[0] = (H[0] + a) | 0; H[1] = (H[1] + b) | 0; H[2] = (H[2] + c) | 0; H[3] = (H[3] + d) | 0;
      H[4] = (H[4] + e) | 0; H[5] = (H[5] + f) | 0; H[6] = (H[6] + g) | 0; H[7] = (H[7] + h) | 0;
    }
    var out = new Uint8Array(32);
    var outView = new DataView(out.buffer);
    for (var i = 0; i < 8; i++) outView.setUint32(i * 4, H[i] >>> 0);
    return out;
  }
  function hmac(key, message) {
    if (key.length > 64) key = sha256(key);
    var inner = new Uint8Array(64 + message.length);
    var outer = new Uint8Array(96);
    for (var i = 0; i < 64; i++) {
      inner[i] = (key[i] || 0) ^ 0x36;
      outer[i] = (key[i] || 0) ^ 0x5c;
    }
    inner.set(message, 64);
    outer.set(sha256(inner), 64);
    return sha256(outer);
  }
  // The proof for a body moved into `channel` ("header", "form-query", "body-store"), bound to what that
  // channel carries; null when this hook has no secret.
  function proof(channel, binding) {
    if (!proofKey) return null;
    var nonce = new Uint8Array(12);
    (w.crypto || globalThis.crypto).getRandomValues(nonce);
    var nonceText = base64url(nonce);
    var time = Date.now();
    var message = new TextEncoder().encode("satchel-body-proof/1\n" + channel + "\n" + time + "\n" + nonceText + "\n" + binding);
    return time + "." + nonceText + "." + base64url(hmac(proofKey, message));
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
    var storeProof = proof("body-store", id);
    if (storeProof) storeHeaders[config.proofHeader] = storeProof;
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
        var headerProof = proof("header", value);
        if (headerProof) headers[config.proofHeader] = headerProof;
        return Promise.resolve(headers);
      }
    }
    var id = randomId();
    return storeBody(id, encoded, String(method).toUpperCase()).then(function () {
      headers[config.bodyIdHeader] = id;
      var storeProof = proof("body-store", id);
      if (storeProof) headers[config.proofHeader] = storeProof;
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
        var url = withParameter(target.action, config.queryParameter, text);
        var formProof = proof("form-query", encodeURIComponent(text));
        return Promise.resolve(formProof ? withParameter(url, config.proofParameter, formProof) : url);
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

  // The JS bridge: window.satchel.call(name, params) -> a promise the app's native handler answers; handle(name, fn)
  // for native code calling the page; on(name, fn) for native events. Every message carries a proof made with the
  // launch's secret: WebKit does not say which frame posted a script message, and a foreign frame, which never gets
  // this script, cannot make one.
  var bridgeHandler = config.bridgeHandler && w.webkit && w.webkit.messageHandlers && w.webkit.messageHandlers[config.bridgeHandler];
  if (bridgeHandler && !w.satchel) {
    var callCount = 0;
    var callPrefix = randomId().slice(0, 8) + "-";
    var pageHandlers = Object.create(null);
    var listeners = Object.create(null);
    var bridgeError = function (code, message) { var error = new Error(message); error.code = code; return error; };
    var bridge = {
      call: function (name, params) {
        var id = callPrefix + (++callCount);
        var json;
        try { json = JSON.stringify(params === undefined ? null : params); } catch (e) { return Promise.reject(bridgeError("bad-params", "satchel: params are not JSON: " + e.message)); }
        var message = { id: id, name: String(name), params: json, token: proof("bridge", id + "\n" + String(name) + "\n" + json) };
        return new Promise(function (resolve, reject) {
          var timer = setTimeout(function () {
            reject(bridgeError("timeout", "satchel: " + message.name + " had no answer in " + config.bridgeTimeoutMs + " ms"));
          }, config.bridgeTimeoutMs);
          Promise.resolve(bridgeHandler.postMessage(message)).then(function (reply) {
            clearTimeout(timer);
            var answer = typeof reply === "string" ? JSON.parse(reply) : reply;
            if (answer && answer.ok) resolve(answer.result === undefined ? null : JSON.parse(answer.result));
            else reject(bridgeError((answer && answer.code) || "handler-error", (answer && answer.message) || "satchel: the call failed"));
          }, function (error) {
            clearTimeout(timer);
            reject(bridgeError("handler-error", String((error && error.message) || error)));
          });
        });
      },
      handle: function (name, fn) { pageHandlers[String(name)] = fn; },
      on: function (name, fn) { (listeners[String(name)] = listeners[String(name)] || []).push(fn); },
      off: function (name, fn) { listeners[String(name)] = (listeners[String(name)] || []).filter(function (f) { return f !== fn; }); },
    };
    Object.defineProperty(w, "satchel", { value: Object.freeze(bridge), configurable: false, enumerable: false, writable: false });
    // Native code's entry points (it checks the view shows one of the app's origins before calling them).
    w.__satchelHook.bridgeEvent = function (name, detail) {
      (listeners[name] || []).slice().forEach(function (fn) {
        try { fn(detail); } catch (e) { if (w.console) w.console.error(e); }
      });
    };
    w.__satchelHook.bridgeInvoke = function (name, params) {
      var fn = pageHandlers[name];
      if (!fn) return Promise.reject(bridgeError("no-handler", "satchel: the page has no handler called " + name));
      return Promise.resolve().then(function () { return fn(params); });
    };
  }
"""#
}
