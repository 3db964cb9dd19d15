/* global proofKey, base64url */
/* exported proof */

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
