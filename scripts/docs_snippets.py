#!/usr/bin/env python3
"""Code and output in the tutorial come from the real files, so they cannot drift.

A line of a docs/*.md page that reads (after optional indentation)

    --8<-- "examples/07_attention.cpp:== 5"

is replaced by that part of the file, dedented and re-indented to the line's indentation. The
selectors (the part after the last ':'; without one, the whole file):

  == N            section N of an example or of its output: from the line that contains "== N."
                  up to the next "== " section, or up to the final "All checks passed" line; in
                  source code also up to the end of the function the section opens (a line that
                  starts with '}'), when an example gives a section a function of its own, and up
                  to main()'s call of such a function
  block REGEX     a declaration with its body: the first line matching REGEX (Python re.search),
                  together with the comment lines just above it, down to the first later line at
                  the same indentation that starts with '}' (a line ending in ';' stands alone)
  NAME            the lines between the marker comments `// --8<-- [start:NAME]` and
                  `// --8<-- [end:NAME]` (marker lines themselves are never shown)

Paths are relative to the repository root. A snippet that cannot be resolved is an error: the
site build fails (mkdocs loads this file as a hook, see mkdocs.yml), and so does

    /usr/bin/python3 scripts/docs_snippets.py --check      # every snippet of every page resolves
    /usr/bin/python3 scripts/docs_snippets.py --expand docs/07-attention.md   # print the result

The hook also copies Debian's KaTeX (libjs-katex) into the built site, so formulas render with no
network (on_post_build below).
"""
import argparse
import pathlib
import re
import shutil
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
KATEX = pathlib.Path("/usr/share/javascript/katex")

SNIPPET = re.compile(r'^(?P<indent>[ \t]*)--8<-- "(?P<ref>[^"]+)"[ \t]*$')
MARKER = re.compile(r"--8<-- \[(start|end):[\w.-]+\]")
# "== 3. " at the start of an output line, or inside a string literal: fmt::print("\n== 3. ...").
SECTION_START = re.compile(r'(?:^|"|\\n)== (\d+)\. ')


class SnippetError(Exception):
    pass


# A function's definition at the top level: its name, then '(' (its '{' may end a later line).
FUNCTION_START = re.compile(r"^\w[^;=]*?\b(\w+)\((?!.*;\s*$)")


def _section_functions(lines):
    """Names of the functions whose bodies hold a section header (a section of its own)."""
    names, current, holds = set(), None, False
    for line in lines:
        m = FUNCTION_START.match(line)
        if m:
            current, holds = m.group(1), False
        elif current and line.startswith("}"):
            if holds:
                names.add(current)
            current = None
        elif current and SECTION_START.search(line):
            holds = True
    return names


def _section(lines, number, path, code):
    """Lines of section `number` (an example's `== N.` header up to the next one; in `code`, also
    up to the end of the function it is in, or up to a call of the function of a later section)."""
    calls = None
    if code:
        names = _section_functions(lines)
        calls = re.compile(r"^\s+(?:%s)\(" % "|".join(map(re.escape, names))) if names else None
    start = None
    for i, line in enumerate(lines):
        m = SECTION_START.search(line)
        if m and int(m.group(1)) == number and start is None:
            start = i
        elif start is not None and (m or "All checks passed" in line or
                                    (code and line.startswith("}")) or
                                    (calls is not None and calls.match(line))):
            return lines[start:i]
    if start is None:
        raise SnippetError(f"{path}: no section '== {number}.'")
    return lines[start:]


def _block(lines, pattern, path):
    """A declaration matching `pattern` with the comments above it and its body."""
    regex = re.compile(pattern)
    for i, line in enumerate(lines):
        if not regex.search(line):
            continue
        first = i
        while first > 0 and lines[first - 1].lstrip().startswith("//"):
            first -= 1
        indent = len(line) - len(line.lstrip())
        opened = False
        for j in range(i, len(lines)):
            text = lines[j].rstrip()
            if not opened:
                if "{" in text:
                    opened = True
                    if text.count("{") == text.count("}"):  # a one-line body
                        return lines[first : j + 1]
                elif text.endswith(";"):  # a declaration, possibly wrapped over several lines
                    return lines[first : j + 1]
                continue
            if len(text) - len(text.lstrip()) == indent and text.lstrip().startswith("}"):
                return lines[first : j + 1]
        raise SnippetError(f"{path}: the block of '{pattern}' never closes")
    raise SnippetError(f"{path}: no line matches '{pattern}'")


def _marked(lines, name, path):
    start = end = None
    for i, line in enumerate(lines):
        if f"--8<-- [start:{name}]" in line:
            start = i + 1
        elif f"--8<-- [end:{name}]" in line and start is not None:
            end = i
            break
    if start is None or end is None:
        raise SnippetError(f"{path}: no marker pair [start:{name}] ... [end:{name}]")
    return lines[start:end]


def resolve(ref):
    """The text a snippet reference stands for (without trailing newline)."""
    path_text, selector = ref, None
    # The selector follows the last ':' (paths in this repository contain none).
    if ":" in ref:
        path_text, selector = ref.split(":", 1)
    path = ROOT / path_text
    if not path.is_file():
        raise SnippetError(f"{path_text}: no such file")
    lines = path.read_text(encoding="utf-8").splitlines()
    if selector is None:
        chosen = lines
    elif selector.startswith("== "):
        code = path.suffix in {".cpp", ".h", ".cu", ".py"}
        chosen = _section(lines, int(selector[3:]), path_text, code)
    elif selector.startswith("block "):
        chosen = _block(lines, selector[len("block ") :], path_text)
    else:
        chosen = _marked(lines, selector, path_text)
    chosen = [line for line in chosen if not MARKER.search(line)]
    while chosen and not chosen[-1].strip():
        chosen.pop()
    while chosen and not chosen[0].strip():
        chosen.pop(0)
    if not chosen:
        raise SnippetError(f"{ref}: selects nothing")
    return textwrap.dedent("\n".join(chosen))


def expand(markdown, where="page"):
    """Replaces every snippet line of `markdown`; raises SnippetError naming the page."""
    out = []
    for number, line in enumerate(markdown.splitlines(), start=1):
        m = SNIPPET.match(line)
        if not m:
            out.append(line)
            continue
        try:
            text = resolve(m.group("ref"))
        except SnippetError as e:
            raise SnippetError(f"{where}:{number}: {e}") from None
        indent = m.group("indent")
        out.extend(indent + t if t.strip() else "" for t in text.splitlines())
    return "\n".join(out) + "\n"


# ---- mkdocs hooks (mkdocs.yml: hooks: [scripts/docs_snippets.py]) ----


def on_page_markdown(markdown, page, config, files):
    return expand(markdown, page.file.src_path)


def on_post_build(config):
    """Copies Debian's KaTeX into the site (fonts included, symlinks followed): no CDN."""
    if not (KATEX / "katex.min.js").is_file():
        raise SnippetError(
            f"{KATEX}/katex.min.js is missing: apt-get install libjs-katex (scripts/build_docs.sh "
            "installs it)"
        )
    target = pathlib.Path(config["site_dir"]) / "assets" / "katex"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in ["katex.min.js", "katex.min.css"]:
        shutil.copy(KATEX / name, target / name)
    (target / "contrib").mkdir()
    shutil.copy(KATEX / "contrib" / "auto-render.js", target / "contrib" / "auto-render.js")
    # Only the woff2 fonts: every browser that runs the site reads them.
    (target / "fonts").mkdir()
    for font in (KATEX / "fonts").resolve().iterdir():
        if font.suffix == ".woff2":
            shutil.copy(font, target / "fonts" / font.name)


# ---- command line ----


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--check", action="store_true", help="resolve every snippet of docs/*.md")
    group.add_argument("--expand", metavar="PAGE", help="print a page with its snippets expanded")
    args = parser.parse_args()
    if args.expand:
        page = pathlib.Path(args.expand)
        sys.stdout.write(expand(page.read_text(encoding="utf-8"), str(page)))
        return 0
    errors, count = [], 0
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        count += sum(1 for line in text.splitlines() if SNIPPET.match(line))
        try:
            expand(text, str(page.relative_to(ROOT)))
        except SnippetError as e:
            errors.append(str(e))
    for e in errors:
        print(f"docs_snippets: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"docs_snippets: all {count} snippets of {len(list(DOCS.glob('*.md')))} pages resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
