/* global randomId */
/* exported encodeBody */

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

