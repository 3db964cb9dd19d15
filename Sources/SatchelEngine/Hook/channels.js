// The body channels for fetch, XMLHttpRequest and sendBeacon. Forms, which the page submits without either, are in
// forms.js.
/* global XHR, originalFetch, originalOpen, originalSend, originalSetRequestHeader, intercepted, needsBody, randomId,
   base64, logError, proof, encodeBody */
/* exported storeBody */

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
  var storeHeaders = {};
  storeHeaders[config.methodHeader] = method;
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
      logError(error);
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


// Beacons cannot carry headers: an intercepted beacon becomes a keepalive fetch with the same body.
if (w.navigator && w.navigator.sendBeacon && originalFetch) {
  var originalBeacon = w.navigator.sendBeacon.bind(w.navigator);
  w.navigator.sendBeacon = function (url, data) {
    if (!intercepted(url) || data === undefined || data === null) return originalBeacon(url, data);
    w.fetch(url, { method: "POST", body: data, keepalive: true, credentials: "include" }).catch(function () {});
    return true;
  };
}

