/* sphinx-tlstages: kernel line -> CUDA lines, in every variant of a tl-pipeline block.
   Hover or focus a kernel line to outline its CUDA; click it (or Enter / Space) to pin it
   in one of six colours from the Okabe-Ito palette, which colour-blind readers can tell
   apart; each pinned line also keeps its number in the gutter. Without this script the
   page keeps its gutters and tooltips. */
(function () {
  "use strict";
  var COLOURS = 6;

  function setup(root) {
    var lines = root.querySelectorAll(".tl-src-line.tl-has-cuda");
    if (!lines.length) return;
    var status = root.querySelector(".tl-link-status");
    var hint = root.querySelector(".tl-link-hint");
    if (hint) {
      hint.appendChild(document.createTextNode(
        " Hover over a kernel line to outline its CUDA in every variant; click it to pin " +
        "it in colour (up to six at once) and open the listings."));
    }
    var pinned = [];  // kernel line numbers, index = colour

    function targets(line) {
      return root.querySelectorAll('[data-tl-line="' + line + '"]');
    }
    function mark(line, cls, on) {
      targets(line).forEach(function (el) { el.classList.toggle(cls, on); });
    }
    function describe(el) {
      var line = el.getAttribute("data-tl-line");
      var parts = [];
      root.querySelectorAll(".tl-linked[data-tl-variant]").forEach(function (listing) {
        var n = listing.querySelectorAll('.tl-cu[data-tl-line="' + line + '"]').length;
        parts.push(listing.getAttribute("data-tl-variant") + ": " + n);
      });
      var number = el.querySelector(".linenos");
      var text = el.textContent.replace(number ? number.textContent : "", "").trim();
      return "Kernel line " + (number ? number.textContent.trim() : line) + " (" + text +
        ") produced CUDA lines in " + parts.join("; ") + ".";
    }
    function toggle(el) {
      var line = el.getAttribute("data-tl-line");
      var at = pinned.indexOf(line);
      if (at >= 0) {
        pinned[at] = null;
        mark(line, "tl-pin", false);
        mark(line, "tl-pin-" + at, false);
        el.setAttribute("aria-pressed", "false");
        return;
      }
      at = pinned.indexOf(null);
      if (at < 0) {
        if (pinned.length < COLOURS) {
          at = pinned.length;
        } else {  // all colours in use: the oldest pin gives its colour up
          at = 0;
          var old = pinned[0];
          mark(old, "tl-pin", false);
          mark(old, "tl-pin-0", false);
          var oldEl = root.querySelector('.tl-src-line[data-tl-line="' + old + '"]');
          if (oldEl) oldEl.setAttribute("aria-pressed", "false");
        }
      }
      pinned[at] = line;
      mark(line, "tl-pin", true);
      mark(line, "tl-pin-" + at, true);
      el.setAttribute("aria-pressed", "true");
      root.querySelectorAll("details.tl-cuda-item").forEach(function (d) {
        d.open = true;
        // Scroll each listing (not the page) to the first line just pinned.
        var first = d.querySelector(".tl-cu.tl-pin-" + at);
        var box = first && first.closest(".tl-linked");
        if (box) {
          box.scrollTop += first.getBoundingClientRect().top -
            box.getBoundingClientRect().top - 2 * first.offsetHeight;
        }
      });
    }

    lines.forEach(function (el) {
      var line = el.getAttribute("data-tl-line");
      function enter() {
        mark(line, "tl-hover", true);
        if (status) status.textContent = describe(el);
      }
      function leave() { mark(line, "tl-hover", false); }
      el.addEventListener("mouseenter", enter);
      el.addEventListener("focus", enter);
      el.addEventListener("mouseleave", leave);
      el.addEventListener("blur", leave);
      el.addEventListener("click", function () { toggle(el); });
      el.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          toggle(el);
        }
      });
    });
  }

  /* A figure wider than the page scrolls sideways; phones hide scroll bars, so a figure
     that overflows is marked (tl-overflows) and the stylesheet says that it scrolls. */
  function markOverflow() {
    document.querySelectorAll(".tl-pipeline .tl-figure").forEach(function (fig) {
      fig.classList.toggle("tl-overflows", fig.scrollWidth > fig.clientWidth + 1);
    });
  }

  /* A link to a CUDA line ("CUDA line 119") lands in a collapsed listing: open it, and
     scroll the listing (not only the page) to the line. */
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var line = id && document.getElementById(id);
    if (!line || !line.classList.contains("tl-cu")) return;
    var details = line.closest("details");
    if (details) details.open = true;
    var box = line.closest(".tl-cuda-listing");
    if (box) {
      box.scrollTop += line.getBoundingClientRect().top -
        box.getBoundingClientRect().top - 2 * line.offsetHeight;
    }
    line.scrollIntoView({block: "center"});
  }

  function start() {
    document.querySelectorAll(".tl-pipeline").forEach(setup);
    openTarget();
    window.addEventListener("hashchange", openTarget);
    markOverflow();
    window.addEventListener("resize", markOverflow);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
