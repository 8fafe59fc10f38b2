// Renders the formulas that pymdownx.arithmatex (generic mode) leaves in the page as
// <span class="arithmatex">\( ... \)</span> and <div class="arithmatex">\[ ... \]</div>,
// with the KaTeX copied into the site (no network). throwOnError: a formula KaTeX cannot render
// (an undefined command such as a \frac whose backslash-f was eaten, a missing brace) is left as
// its TeX source and reported on the console, where scripts/check_site.py finds it; with false,
// KaTeX would draw an undefined command as red text and report nothing.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".arithmatex").forEach(function (element) {
    renderMathInElement(element, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true },
      ],
      throwOnError: true,
    });
  });
});
