#!/usr/bin/env python3
"""Finds pipelines whose reader may stop before its writer is done, in scripts that set pipefail.

`producer | grep -q PATTERN` looks harmless, but grep -q exits at its first match; a producer still
writing then dies of SIGPIPE (exit 141), and under `set -o pipefail` the whole pipeline reports
failure although the match was found. Whether it happens depends on timing and on how much the
producer prints, so such a check passes on one machine and fails on the next. (It broke
scripts/install_deps.sh on fresh Debian 12 machines: `apt-cache policy NAME | grep -q Candidate`
read "no candidate" for a package that had one.) The fix is to read the whole output first:
`text=$(producer)` then `grep -q PATTERN <<<"$text"` or `[[ $text == *...* ]]`.

Usage: python3 scripts/check_early_readers.py [FILE...]   (default: every shell script of the tree,
.ci/run, and the `bash -c` strings of the CMake files). Exits 1 and lists each finding.
"""

import os
import re
import sys
from pathlib import Path

# A reader that can exit before end of input: grep's -q, -l, -L or -m, head, sed or awk that quit.
READER = re.compile(
    r"""\s*(?:\w+=\S*\s+)*         # environment assignments
        (?:
          grep\b(?:\s+-[-\w]*)*?\s+-(?:[a-zA-Z]*[qlLm][a-zA-Z]*|m\s*\d+)\b  # grep -q, -l, -L, -m
        | grep\b[^|;&]*\s--(?:quiet|silent|max-count|files-with(?:out)?-match(?:es)?)\b
        | head\b
        | sed\b[^|&]*(?:\bq\b|[0-9/;]q\b)   # sed ... q
        | awk\b[^|&]*\bexit\b              # awk that exits early
        )""",
    re.VERBOSE,
)


def logical_lines(text):
    """Lines with backslash continuations joined, each with its first line number."""
    start, parts = None, []
    for number, line in enumerate(text.splitlines(), 1):
        if start is None:
            start = number
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            parts.append(stripped[:-1])
            continue
        parts.append(line)
        yield start, " ".join(parts)
        start, parts = None, []
    if parts:
        yield start, " ".join(parts)


def strip_comment(line):
    """The line without a trailing # comment (a # that starts a word, outside quotes)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def unquoted_pipes(line, track_quotes):
    """Offsets just past each | of the line that is a pipe: not ||, not inside quotes (but inside
    a command substitution within double quotes: "$(a | b)" is code)."""
    stack = []  # open quotes and parentheses, innermost last
    for i, c in enumerate(line):
        top = stack[-1] if stack else None
        if top == "'":
            if c == "'":
                stack.pop()
        elif top == '"':
            if c == '"':
                stack.pop()
            elif c == "(" and line[i - 1 : i] == "$":
                stack.append("(")
        elif track_quotes and c in "'\"":
            stack.append(c)
        elif c == "(":
            stack.append("(")
        elif c == ")" and top == "(":
            stack.pop()
        elif c == "|" and line[i - 1 : i] != "|" and line[i + 1 : i + 2] != "|":
            yield i + 1


def findings(path, text):
    is_cmake = path.suffix == ".cmake" or path.name == "CMakeLists.txt"
    if "pipefail" not in text:
        return
    for number, line in logical_lines(text):
        if is_cmake and "pipefail" not in line:
            continue  # in CMake only the bash -c strings that set pipefail themselves
        # In CMake the script is itself a quoted string: only its pipes are looked at.
        code = line if is_cmake else strip_comment(line)
        for start in unquoted_pipes(code, track_quotes=not is_cmake):
            match = READER.match(code, start)
            if match:
                yield f"{path}:{number}: early-closing reader under pipefail: |{match.group(0)}"
                break


# The tree is walked, not asked of git (a `git archive` has no repository), leaving out the
# top-level folders that builds and runs write.
SKIPPED_FOLDERS = {"site", "runs", "exercises", "out"}
ROOT = Path(__file__).resolve().parent.parent


def default_files():
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = sorted(
            d for d in subfolders
            if not (Path(folder) == ROOT and (d in SKIPPED_FOLDERS or d.startswith("build")))
            and d != "__pycache__" and (not d.startswith(".") or d == ".ci")
        )
        for name in sorted(names):
            path = Path(folder, name).relative_to(ROOT)
            if path.suffix in (".sh", ".cmake") or name == "CMakeLists.txt" or str(path) == ".ci/run":
                yield path


def main(argv):
    if not argv:
        os.chdir(ROOT)
    files = [Path(a) for a in argv] or list(default_files())
    found = [f for path in files for f in findings(path, path.read_text(errors="replace"))]
    for f in found:
        print(f)
    if found:
        print(
            f"check_early_readers: {len(found)} pipeline(s) whose reader can stop early; read the"
            " whole output first (text=$(producer); grep -q PATTERN <<<\"$text\")",
            file=sys.stderr,
        )
        return 1
    print(f"check_early_readers: {len(files)} files, no early-closing reader under pipefail")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
