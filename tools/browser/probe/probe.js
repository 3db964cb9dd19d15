// probe.js: sends request bodies of every kind to /echo/<case> on this page's own origin and reports what it
// meant to send (the exact bytes, base64) so that tools/browser-test can compare them with what reached the
// echo origin. Nothing here knows about Satchel: with --inject-hook, satchel serve adds its body hook in front.
"use strict";

(function () {
  // Deterministic bytes: every value 0-255 in order, then a pattern that is not a multiple of 256 long.
  function allBytes(repeat) {
    var out = new Uint8Array(256 * repeat + 7);
    for (var i = 0; i < out.length; i++) out[i] = i < 256 * repeat ? i % 256 : (i * 7 + 3) % 256;
    return out;
  }
  // The 5 MB body: an LCG pattern, so a shifted or truncated copy cannot match by accident.
  function bigBytes(size) {
    var out = new Uint8Array(size);
    var x = 12345;
    for (var i = 0; i < size; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      out[i] = x >>> 24;
    }
    return out;
  }
  function largeText(size) {
    var line = "The quick brown fox jumps over the lazy dog; 0123456789 & = + % ?\n";
    var text = "";
    while (text.length < size) text += line;
    return text.slice(0, size);
  }

  var unicode = "Zoë Müller-Łukasiewicz · 東京 · 🎒👜 · ∑√∞ · e\u0301 (NFD kept) · \u00e9 (NFC) · \ud83d\udc69\u200d\ud83d\udcbb · end";
  var json = JSON.stringify({ order: 42, items: [{ sku: "café-tote", qty: 2 }], note: "quotes \" and \\ backslash, ünïcode ✓" });

  function base64(bytes) {
    var text = "";
    for (var i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(text);
  }
  function utf8(text) { return new TextEncoder().encode(text); }

  // A FormData holding a File: its bytes depend on the browser's boundary, so the parts are what it means to send.
  var formFileName = "probe-form ü.bin";
  function formDataWithFile() {
    var data = new FormData();
    data.append("caption", "Ünïcode caption · 名前 \"quoted\"");
    data.append("upload", new File([allBytes(2)], formFileName, { type: "application/octet-stream" }));
    data.append("after", "a value after the file");
    return data;
  }

  // The cases: body (what is passed to XHR/fetch/sendBeacon), the bytes that body stands for, and its type.
  var cases = {
    "xhr-text": { api: "xhr", body: "plain text body: a=1&b=2; 100% sure + more", type: null },
    "xhr-json": { api: "xhr", body: json, type: "application/json" },
    "xhr-unicode": { api: "xhr", body: unicode, type: "text/plain;charset=UTF-8" },
    "xhr-binary": { api: "xhr", body: allBytes(2), type: "application/octet-stream" },
    "xhr-arraybuffer": { api: "xhr", body: allBytes(1).buffer, bytes: allBytes(1), type: null },
    "xhr-large-text": { api: "xhr", body: largeText(20000), type: "text/plain" },
    "xhr-put": { api: "xhr", method: "PUT", body: json, type: "application/json" },
    "fetch-text": { api: "fetch", body: "fetch text body: x=1&y=2", type: null },
    "fetch-json": { api: "fetch", body: json, type: "application/json" },
    "fetch-unicode": { api: "fetch", body: unicode, type: "text/plain; charset=utf-8" },
    "fetch-binary": { api: "fetch", body: allBytes(3), type: "application/octet-stream" },
    "fetch-blob": { api: "fetch", body: new Blob([allBytes(1)], { type: "application/x-probe" }), bytes: allBytes(1), type: null },
    "fetch-urlsearchparams": { api: "fetch", body: new URLSearchParams({ q: "café & co", n: "1+1=2" }), bytes: utf8(new URLSearchParams({ q: "café & co", n: "1+1=2" }).toString()), type: null },
    "fetch-request-object": { api: "request", body: "sent in a Request object", type: "text/plain" },
    "fetch-patch": { api: "fetch", method: "PATCH", body: unicode, type: "text/plain" },
    "fetch-5mb": { api: "fetch", body: bigBytes(5 * 1024 * 1024), type: "application/octet-stream" },
    "fetch-formdata-file": { api: "fetch", body: formDataWithFile(), type: null, parts: [
      ["caption", null, null, utf8("Ünïcode caption · 名前 \"quoted\"")],
      ["upload", formFileName, "application/octet-stream", allBytes(2)],
      ["after", null, null, utf8("a value after the file")],
    ] },
    "beacon-text": { api: "beacon", body: "beacon text · ünïcode", type: null },
    "beacon-blob": { api: "beacon", body: new Blob([json], { type: "application/json" }), bytes: utf8(json), type: null },
  };

  function meant(spec) {
    if (spec.bytes) return spec.bytes;
    if (typeof spec.body === "string") return utf8(spec.body);
    return spec.body;
  }

  function send(name) {
    var spec = cases[name];
    var url = "/echo/" + name;
    var method = spec.method || "POST";
    var report = spec.parts
      ? { name: name, method: method, url: url, api: spec.api, type: spec.type, parts: spec.parts.map(function (p) { return [p[0], p[1], p[2], base64(p[3])]; }),
          length: spec.parts.reduce(function (sum, p) { return sum + p[3].length; }, 0) }
      : { name: name, method: method, url: url, api: spec.api, type: spec.type, sent: base64(meant(spec)), length: meant(spec).length };
    if (spec.api === "xhr") {
      return new Promise(function (resolve) {
        var xhr = new XMLHttpRequest();
        xhr.open(method, url);
        if (spec.type) xhr.setRequestHeader("Content-Type", spec.type);
        xhr.onloadend = function () { report.status = xhr.status; report.response = xhr.responseText; resolve(report); };
        xhr.send(spec.body);
      });
    }
    if (spec.api === "beacon") {
      report.status = navigator.sendBeacon(url, spec.body) ? "queued" : "refused";
      return Promise.resolve(report);
    }
    var headers = spec.type ? { "Content-Type": spec.type } : undefined;
    var request = spec.api === "request"
      ? fetch(new Request(url, { method: method, body: spec.body, headers: headers }))
      : fetch(url, { method: method, body: spec.body, headers: headers });
    return request.then(function (response) {
      report.status = response.status;
      return response.text();
    }).then(function (text) { report.response = text; return report; }, function (error) {
      report.status = "failed";
      report.response = String(error);
      return report;
    });
  }

  // What the forms mean to send, serialised by the browser's own rules (URLSearchParams of the FormData).
  function formFields(id, submitterId) {
    var form = document.getElementById(id);
    var submitter = submitterId ? document.getElementById(submitterId) : null;
    var data = submitter ? new FormData(form, submitter) : new FormData(form);
    var fields = [];
    data.forEach(function (value, key) {
      fields.push(typeof value === "string" ? [key, value] : [key, { name: value.name, type: value.type, size: value.size }]);
    });
    return fields;
  }

  window.satchelProbe = {
    names: Object.keys(cases),
    send: send,
    formFields: formFields,
    submitByMethod: function () { document.getElementById("form-submit-method").submit(); },
    // sendBeacon's promise: delivery even when the page goes away at once (analytics on pagehide).
    beaconThenLeave: function () {
      var text = "beacon sent as the page leaves · ünïcode";
      var queued = navigator.sendBeacon("/echo/beacon-unload", text);
      setTimeout(function () { location.href = "/?left=1"; }, 0);
      return { name: "beacon-unload", method: "POST", url: "/echo/beacon-unload", api: "beacon", type: null, sent: base64(utf8(text)), length: utf8(text).length, status: queued ? "queued" : "refused" };
    },
  };
  document.getElementById("hook-state").textContent = window.__satchelHook ? "hook installed" : "no hook";
  document.body.dataset.probeReady = "1";
})();
