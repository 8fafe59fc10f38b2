#!/usr/bin/env python3
"""Checks the tutorial's sources for text that a careless escape turned into something else, and
the product's pages and code for words that belong to its history.

    /usr/bin/python3 scripts/check_docs_text.py          # exit 1 with one line per problem

Writing TeX through a string that interprets backslash escapes (a Python or shell string, a JSON
value) silently eats the first letter of a command: `\\frac` becomes a form feed and "rac",
`\\ne` a line break and "e", `\\beta` a backspace, `\\text` a tab, `\\rho` a carriage return. KaTeX
then renders "rac" as letters, with no error, so only the sources show it. Two checks:
1. no control character but the line break in any text file of docs/ (pages, outputs, figures,
   scripts, styles) or in README.md, examples/README.md and mkdocs.yml;
2. no inline formula ($...$) broken across lines where the new line starts with what is left of a
   TeX command that begins with n (`\\ne` -> "e", `\\nabla` -> "abla", `\\neq` -> "eq"...).
3. the product reads as a product: README files, docs/, bench/NOTES.md and the code (autograd,
   nn, distributed, examples, tests, bench, scripts, cmake) speak of scratchgrad, not of how it was
   built: no "session", no "issue N", no absolute path of a developer's machine (/work/...,
   /root/..., /home/...). The history lives in the git log; bench/NOTES.md is a measurement log
   whose entries are named by their dates and commits. Raw logs (bench/gpu/runs/) and data files
   (JSON) are not checked.
The rendered pages are checked in Chromium by scripts/check_site.py (KaTeX errors included).
"""
import pathlib
import re
import sys
import unicodedata

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEXT_SUFFIXES = {".md", ".txt", ".svg", ".js", ".css", ".html", ".yml", ".json"}
ESCAPE_NAMES = {"\t": "tab (\\t of \\text, \\theta, \\times?)", "\f": "form feed (\\f of \\frac?)",
                "\b": "backspace (\\b of \\beta, \\bar?)", "\r": "carriage return (\\r of \\rho?)",
                "\v": "vertical tab (\\v of \\vec?)", "\a": "bell (\\a of \\alpha?)"}
# What a line break leaves of the TeX commands that start with n.
N_COMMANDS = ("ne", "neq", "nabla", "neg", "not", "notin", "nu", "ni", "nleq", "ngeq", "nmid",
              "newline", "nolimits", "nearrow", "nwarrow", "natural", "nexists", "nparallel")
N_REMNANT = re.compile(r"\n[ \t]*(" + "|".join(sorted((c[1:] for c in N_COMMANDS), key=len,
                                                        reverse=True)) + r")(?![A-Za-z])")
# An inline formula: one $ (not $$) to the next, not across a blank line.
INLINE_MATH = re.compile(r"(?<![$\\])\$(?!\$)((?:[^$\\]|\\.)+?)(?<!\\)\$(?!\$)", re.S)


def sources():
    for path in sorted((ROOT / "docs").rglob("*")):
        if path.is_file() and path.suffix in TEXT_SUFFIXES:
            yield path
    for name in ("README.md", "examples/README.md", "mkdocs.yml"):
        if (ROOT / name).is_file():
            yield ROOT / name


# The product's pages and code, for check 3: (folder or file, suffixes).
PRODUCT_SOURCES = [("README.md", None), ("examples/README.md", None), ("bench/README.md", None),
                   ("bench/NOTES.md", None), ("bench/gpu/RESULTS.md", None), ("docs", {".md"}),
                   ("mkdocs.yml", None)]
CODE_FOLDERS = ("autograd", "nn", "train", "distributed", "examples", "tests", "bench", "scripts",
                "cmake", ".ci")
CODE_SUFFIXES = {".h", ".cpp", ".cu", ".cuh", ".py", ".sh", ".cmake", ".txt", ".in", ""}
HISTORY = [
    (re.compile(r"\bsessions?\b", re.I), "'session' (name a measurement by its date and commit)"),
    (re.compile(r"\bissues? #?\d+", re.I), "an issue number (the history goes to the git log)"),
    (re.compile(r"(?<![\w.~])/(work|root|home)/"), "an absolute path of a developer's machine"),
]
# Words that are not history: the DevTools protocol's sessions (scripts/check_site.py).
NOT_HISTORY = re.compile(r"self\.session|session=|sessionId|if session:")


def product_files():
    for name, suffixes in PRODUCT_SOURCES:
        path = ROOT / name
        if path.is_file():
            yield path
        elif path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.is_file() and file.suffix in suffixes and "outputs" not in file.parts:
                    yield file
    for folder in CODE_FOLDERS:
        for file in sorted((ROOT / folder).rglob("*")):
            if not file.is_file() or file.suffix not in CODE_SUFFIXES:
                continue
            if "golden" in file.parts or "data" in file.parts or file.name == "check_docs_text.py":
                continue
            if file.suffix == "" and not (file.name.startswith(".") or file.name == "run"):
                continue
            yield file


def history_in(path):
    rel = path.relative_to(ROOT)
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        if NOT_HISTORY.search(line):
            continue
        for pattern, what in HISTORY:
            found = pattern.search(line)
            if found:
                problems.append(f"{rel}:{number}: {what}: '{found.group(0)}'")
    return problems


def problems_in(path):
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(ROOT)
    problems = []
    for number, line in enumerate(text.split("\n"), start=1):
        for column, char in enumerate(line, start=1):
            if unicodedata.category(char) == "Cc":
                name = ESCAPE_NAMES.get(char, "control character")
                problems.append(f"{rel}:{number}:{column}: U+{ord(char):04X} {name}")
    if path.suffix == ".md":
        for formula in INLINE_MATH.finditer(text):
            body = formula.group(1)
            if "\n\n" in body:
                continue  # not one formula: two $ in different paragraphs
            remnant = N_REMNANT.search(body)
            if remnant:
                number = text.count("\n", 0, formula.start(1) + remnant.start()) + 2
                problems.append(f"{rel}:{number}: formula broken before '{remnant.group(1)}': "
                                f"a \\n{remnant.group(1)} whose backslash-n became a line break?")
    return problems


def main():
    problems = [p for path in sources() for p in problems_in(path)]
    problems += [p for path in product_files() for p in history_in(path)]
    for p in problems:
        print(f"check_docs_text: {p}", file=sys.stderr)
    if problems:
        print(f"check_docs_text: {len(problems)} problems", file=sys.stderr)
        return 1
    print("check_docs_text: no control characters, no formula broken by a lost \\n, no history in "
          "the product's pages and code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
