// Renders the formulas that pymdownx.arithmatex (generic mode) leaves in the page as
// <span class="arithmatex">\( ... \)</span> and <div class="arithmatex">\[ ... \]</div>,
// with the KaTeX copied into the site (no network).
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".arithmatex").forEach(function (element) {
    renderMathInElement(element, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true },
      ],
      throwOnError: false,
    });
  });
});
