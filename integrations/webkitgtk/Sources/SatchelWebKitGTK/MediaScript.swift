/// Makes `<video>` and `<audio>` play files from the custom schemes in WebKitGTK, by handing them the ``MediaRelay``'s
/// loopback URL for the same file.
///
/// Why they do not play as they are: WebKitGTK's media player is GStreamer, and its source element (`webkitwebsrc`)
/// accepts only `http`, `https` and `blob` URLs (`webKitWebSrcGetProtocols`), so a `satchel://` media URL never
/// reaches the scheme handler as a media load, whatever status, length or Range answer the handler would give.
///
/// Injected at document start into every frame, the script rewrites custom-scheme `src` values of media elements and
/// their `<source>` children, synchronously: through the `src` property setters (elements made by script, attached or
/// not) and a mutation observer (parsed elements, `setAttribute`). The original URL stays in `data-satchel-src`. A
/// `<source>` rewritten after its element started choosing a source restarts the element (`load()`), keeping a `play()`
/// the page asked for. The page sees the relay URL in `src` and `currentSrc`.
public enum MediaScript {
    /// The script for `schemes` (lower-case, without `:`), relaying to `relayBaseURL` (``MediaRelay/baseURL``).
    public static func render(relayBaseURL: String, schemes: Set<String>) -> String {
        let list = schemes.sorted().map { "\"\($0)\"" }.joined(separator: ",")
        return "/* Satchel media: custom-scheme media through the loopback relay (WebKitGTK's player takes http, https and blob only). */\n"
            + "(function (relay, schemes) {\n" + body + "\n})(\"" + relayBaseURL + "\", [" + list + "]);\n"
    }

    static let body = #"""
  "use strict";
  if (window.__satchelMedia) return;
  var state = window.__satchelMedia = { relayed: 0 };
  var setAttribute = Element.prototype.setAttribute, getAttribute = Element.prototype.getAttribute;
  function relayed(url) {
    var parsed;
    try { parsed = new URL(String(url), document.baseURI); } catch (e) { return null; }
    var scheme = parsed.protocol.slice(0, -1).toLowerCase();
    if (schemes.indexOf(scheme) < 0 || !parsed.host) return null;
    return relay + scheme + "/" + parsed.host + parsed.pathname + parsed.search;
  }
  function mediaOf(element) {
    if (element.tagName === "SOURCE") element = element.parentElement;
    return element && (element.tagName === "VIDEO" || element.tagName === "AUDIO") ? element : null;
  }
  var restarting = new Set();
  // A <source> changed after its element began choosing one: choose again, and play if the page asked to.
  function restart(media) {
    if (restarting.has(media)) return;
    restarting.add(media);
    queueMicrotask(function () {
      restarting.delete(media);
      if (media.networkState === media.NETWORK_EMPTY) return;
      var wanted = !media.paused || media.autoplay;
      media.load();
      if (wanted) media.play().catch(function () {});
    });
  }
  function convert(element) {
    if (!element.getAttribute || !mediaOf(element)) return;
    var original = getAttribute.call(element, "src");
    var url = original && relayed(original);
    if (!url) return;
    setAttribute.call(element, "data-satchel-src", original);
    setAttribute.call(element, "src", url);
    state.relayed++;
    if (element.tagName === "SOURCE") restart(mediaOf(element));
  }
  [window.HTMLMediaElement, window.HTMLSourceElement].forEach(function (type) {
    var descriptor = type && Object.getOwnPropertyDescriptor(type.prototype, "src");
    if (!descriptor || !descriptor.set) return;
    Object.defineProperty(type.prototype, "src", {
      configurable: true, enumerable: descriptor.enumerable, get: descriptor.get,
      set: function (value) {
        var url = relayed(value);
        if (url) {
          setAttribute.call(this, "data-satchel-src", String(value));
          state.relayed++;
        }
        descriptor.set.call(this, url || value);
      },
    });
  });
  function scan(root) {
    if (root.matches && root.matches("video[src], audio[src], video > source[src], audio > source[src]")) convert(root);
    if (root.querySelectorAll) root.querySelectorAll("video[src], audio[src], video > source[src], audio > source[src]").forEach(convert);
  }
  new MutationObserver(function (records) {
    records.forEach(function (record) {
      if (record.type === "attributes") convert(record.target);
      else record.addedNodes.forEach(scan);
    });
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["src"] });
"""#
}
