/// Makes `<video>` and `<audio>` play files from the custom schemes in WebKitGTK.
///
/// Why they do not play as they are: WebKitGTK's media player is GStreamer, and its source element (`webkitwebsrc`)
/// accepts only `http`, `https` and `blob` URLs (`webKitWebSrcGetProtocols`), so a `satchel://` media URL never
/// reaches the scheme handler as a media load, whatever status, length or Range answer the handler would give; the
/// element stays at `readyState` 0. This script, injected at document start into every frame, hands such elements a
/// `blob:` URL of the same file instead, fetched through the scheme handler (so the engine still answers it, from
/// the package or the network). The cost: the whole file is read into the page's memory before it plays, which
/// suits the short clips apps ship in packages, not long videos; a loopback HTTP relay for media would stream them.
public enum MediaScript {
    /// The script for `schemes` (lower-case, without `:`).
    public static func render(schemes: Set<String>) -> String {
        let list = schemes.sorted().map { "\"\($0):\"" }.joined(separator: ",")
        return "/* Satchel media: custom-scheme media as blob: URLs (WebKitGTK's player takes http, https and blob only). */\n"
            + "(function (schemes) {\n" + body + "\n})([" + list + "]);\n"
    }

    static let body = #"""
  "use strict";
  if (window.__satchelMedia) return;
  window.__satchelMedia = { converted: 0, failed: 0 };
  var cache = new Map();
  function onScheme(url) {
    try { return schemes.indexOf(new URL(url, document.baseURI).protocol) >= 0; } catch (e) { return false; }
  }
  function blobURL(url) {
    var absolute = new URL(url, document.baseURI).href;
    if (!cache.has(absolute)) {
      cache.set(absolute, fetch(absolute).then(function (response) {
        if (!response.ok) throw new Error("satchel media: " + response.status + " for " + absolute);
        return response.blob();
      }).then(function (blob) { return URL.createObjectURL(blob); }));
    }
    return cache.get(absolute);
  }
  function isMedia(element) {
    var tag = element.tagName;
    if (tag === "SOURCE") tag = element.parentElement ? element.parentElement.tagName : "";
    return tag === "VIDEO" || tag === "AUDIO";
  }
  function convert(element) {
    if (!element.getAttribute || !isMedia(element)) return;
    var attribute = element.getAttribute("src");
    if (!attribute || !onScheme(attribute) || element.__satchelMediaFor === attribute) return;
    element.__satchelMediaFor = attribute;
    blobURL(attribute).then(function (url) {
      if (element.getAttribute("src") !== attribute) return; // replaced meanwhile
      element.dataset.satchelSrc = attribute;
      element.__satchelMediaFor = url;
      element.setAttribute("src", url);
      var media = element.tagName === "SOURCE" ? element.parentElement : element;
      // A play() the page asked for before the swap is kept: the new source restarts the element.
      var wanted = media && (!media.paused || media.autoplay);
      if (element.tagName === "SOURCE" && media && media.load) media.load();
      if (wanted && media.play) media.play().catch(function () {});
      window.__satchelMedia.converted++;
    }, function (error) { window.__satchelMedia.failed++; if (window.console) console.error(error); });
  }
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
  // Elements given a src by script go through the same attribute, which the observer sees.
"""#
}
