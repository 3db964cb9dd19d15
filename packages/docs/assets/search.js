/* search.js — filters the page list on the docs home page.
 * Plain script (no modules, no dependencies). Matching ignores case and
 * accents, so "cafe" finds "Café mode". A ?q= query string pre-fills the box.
 * When set up, it marks <body data-search-ready="1">.
 */
(function () {
  "use strict";

  function fold(text) {
    return text
      .normalize("NFD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase();
  }

  function init() {
    var input = document.getElementById("search");
    var list = document.getElementById("page-list");
    if (!input || !list) return;
    var count = document.getElementById("search-count");
    var empty = document.getElementById("search-empty");
    var items = Array.prototype.slice.call(list.querySelectorAll("li"));
    var haystacks = items.map(function (li) {
      return fold(li.textContent + " " + (li.getAttribute("data-keywords") || ""));
    });

    function apply() {
      var terms = fold(input.value).split(/\s+/).filter(Boolean);
      var shown = 0;
      items.forEach(function (li, i) {
        var match = terms.every(function (t) {
          return haystacks[i].indexOf(t) !== -1;
        });
        li.hidden = !match;
        if (match) shown++;
      });
      if (count) {
        count.textContent = shown + " of " + items.length + " pages";
        count.setAttribute("data-shown", String(shown));
      }
      if (empty) empty.hidden = shown !== 0;
    }

    var q = new URLSearchParams(window.location.search).get("q");
    if (q) input.value = q;
    input.addEventListener("input", apply);
    apply();
    document.body.setAttribute("data-search-ready", "1");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
