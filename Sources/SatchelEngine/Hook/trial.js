/* global proof, XHR */
/* exported trialSignal */

// What the judge of a release on trial (SatchelHost's TrialJudge) hears from the page: its first contentful paint,
// window.satchel.ready(), uncaught errors, unhandled rejections and scripts or stylesheets that failed to load. The
// page only reports facts (message, the script they came from, whether a rejection came from a failed fetch or XHR);
// native code decides what counts against the release. Each message carries a proof, as bridge messages do.
var trialHandler = config.trialHandler && w.webkit && w.webkit.messageHandlers && w.webkit.messageHandlers[config.trialHandler];
var readyCalled = false;
function trialSignal(kind, fields) {
  if (!trialHandler) return;
  if (kind === "ready") readyCalled = true;
  var message = {
    kind: kind,
    message: String(fields.message || "").slice(0, 1000),
    source: String(fields.source || "").slice(0, 1000),
    network: !!fields.network,
  };
  message.token = proof("trial", message.kind + "\n" + message.message + "\n" + message.source + "\n" + (message.network ? "1" : "0"));
  try { trialHandler.postMessage(message); } catch (e) { /* the view is going away */ }
}
if (trialHandler) {
  // Errors a failed request rejected with: an API that is offline is not the release's fault. That covers a fetch that
  // rejects, and reading the body of an answer that is an error (a status of 400 or more, such as the 502 the engine
  // answers for a network route whose upstream is down): `r.json()` of an error page rejects with a SyntaxError from
  // the page's own code, which says nothing of the release.
  var networkFailures = typeof WeakSet === "function" ? new WeakSet() : null;
  var failedAnswers = typeof WeakSet === "function" ? new WeakSet() : null;
  var tagFailure = function (error) {
    if (error && typeof error === "object") networkFailures.add(error);
  };
  var trialFetch = w.fetch;
  if (trialFetch && networkFailures) {
    w.fetch = function () {
      return trialFetch.apply(this, arguments).then(function (response) {
        if (response && typeof response === "object" && response.status >= 400) failedAnswers.add(response);
        return response;
      }, function (error) {
        tagFailure(error);
        throw error;
      });
    };
    var Body = w.Response && w.Response.prototype;
    ["json", "text", "arrayBuffer", "blob", "formData"].forEach(function (name) {
      var read = Body && Body[name];
      if (typeof read !== "function") return;
      Body[name] = function () {
        var reading = read.apply(this, arguments);
        // Tag what it rejects with; the page's own handlers see the same promise and the same error.
        if (failedAnswers.has(this)) reading.then(null, tagFailure);
        return reading;
      };
    });
  }
  var isNetworkFailure = function (reason) {
    if (!reason || typeof reason !== "object") return false;
    if (networkFailures && networkFailures.has(reason)) return true;
    // XHR wrappers (axios and the like) reject with the request, its event or an error holding the request.
    if (XHR && (reason instanceof XHR || reason.target instanceof XHR || reason.request instanceof XHR)) return true;
    return typeof w.ProgressEvent === "function" && reason instanceof w.ProgressEvent;
  };
  // The script a rejection came from: the first URL of its stack (a rejection event names no file).
  var stackSource = function (reason) {
    var stack = reason && typeof reason === "object" && reason.stack ? String(reason.stack) : "";
    var match = /([a-z][a-z0-9+.-]*:\/\/[^\s()]+?)(?::\d+){0,2}(?:\)|\s|$)/i.exec(stack);
    return match ? match[1] : "";
  };
  var describe = function (reason) {
    if (reason && typeof reason === "object" && reason.message !== undefined) return (reason.name ? reason.name + ": " : "") + reason.message;
    try { return String(reason); } catch (e) { return "unhandled rejection"; }
  };
  w.addEventListener("error", function (event) {
    var target = event.target;
    if (target && target !== w && (target.tagName === "SCRIPT" || (target.tagName === "LINK" && /stylesheet/i.test(target.rel || "")))) {
      var url = target.src || target.href || "";
      trialSignal("resource", { message: "failed to load " + url, source: url });
      return;
    }
    trialSignal("error", { message: event.message || describe(event.error), source: event.filename || "" });
  }, true);
  w.addEventListener("unhandledrejection", function (event) {
    trialSignal("rejection", { message: describe(event.reason), source: stackSource(event.reason), network: isNetworkFailure(event.reason) });
  });
  // The page's paint is the top document's: an app frame inside it paints its own, which says nothing of the page.
  var topFrame = (function () { try { return w.top === w || !w.top; } catch (e) { return false; } })();
  // A page shown again from the back-forward cache paints no first contentful paint: it is the same page, healthy
  // as it was, and says so again (with its ready(), if it had called it).
  if (topFrame) {
    w.addEventListener("pageshow", function (event) {
      if (!event.persisted) return;
      trialSignal("paint", {});
      if (readyCalled) trialSignal("ready", {});
    });
  }
  if (topFrame && typeof w.PerformanceObserver === "function") {
    try {
      new w.PerformanceObserver(function (list) {
        list.getEntries().forEach(function (entry) { if (entry.name === "first-contentful-paint") trialSignal("paint", {}); });
      }).observe({ type: "paint", buffered: true });
    } catch (e) { /* no paint timing: no paint is heard, and the page is judged by its load timeout */ }
  }
}
