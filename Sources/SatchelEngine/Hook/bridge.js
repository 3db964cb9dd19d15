/* global randomId, logError, proof, trialSignal */

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
    // The page says it works (an app that requires it gets its trial confirmed only after this call).
    ready: function () { trialSignal("ready", {}); },
  };
  Object.defineProperty(w, "satchel", { value: Object.freeze(bridge), configurable: false, enumerable: false, writable: false });
  // Native code's entry points (it checks the view shows one of the app's origins before calling them).
  w.__satchelHook.bridgeEvent = function (name, detail) {
    (listeners[name] || []).slice().forEach(function (fn) {
      try { fn(detail); } catch (e) { logError(e); }
    });
  };
  w.__satchelHook.bridgeInvoke = function (name, params) {
    var fn = pageHandlers[name];
    if (!fn) return Promise.reject(bridgeError("no-handler", "satchel: the page has no handler called " + name));
    return Promise.resolve().then(function () { return fn(params); });
  };
}
