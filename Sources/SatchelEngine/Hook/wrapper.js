/* Satchel body hook: keeps request bodies that WebKit drops for intercepted requests. */
(function (config) {
  "use strict";
  var w = typeof window !== "undefined" ? window : globalThis;
  if (w.__satchelHook) return; // safe to inject twice
  // Only on the app's own pages: on any other origin (a site the web view navigated to) the hook does nothing,
  // so a foreign page cannot make it prove a body for the app's origins.
  if (w.location && w.location.origin && config.origins.indexOf(w.location.origin) < 0) return;
  // @features
})(SATCHEL_CONFIG);
