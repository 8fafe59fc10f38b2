#!/usr/bin/env python3
"""scripts/docs_snippets.py's "== N" selector on an example whose sections live in functions: a
section ends at the next section, at the end of its function, and at main()'s call of the function
of a later section; in an output file a line starting with '}' does not end it."""
import importlib.util
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("docs_snippets", ROOT / "scripts/docs_snippets.py")
snippets = importlib.util.module_from_spec(spec)
spec.loader.exec_module(snippets)

EXAMPLE = '''namespace {

void later_sections(int x,
                    int y) {
  fmt::print("\\n== 3. In a function\\n");
  use(x);
}

}  // namespace

int main() {
  fmt::print("== 1. First\\n");
  one();

  fmt::print("\\n== 2. Second\\n");
  two();

  later_sections(1, 2);

  fmt::print("\\n{}\\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
}
'''
OUTPUT = '''== 1. A graph
digraph {
}
== 2. Next
'''


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "example.cpp").write_text(EXAMPLE)
        (root / "example.txt").write_text(OUTPUT)
        snippets.ROOT = root
        cases = {
            "example.cpp:== 1": 'fmt::print("== 1. First\\n");\none();',
            # Up to main()'s call of the function that holds section 3, not into it.
            "example.cpp:== 2": 'fmt::print("\\n== 2. Second\\n");\ntwo();',
            # Up to the end of its function (a signature over two lines).
            "example.cpp:== 3": 'fmt::print("\\n== 3. In a function\\n");\nuse(x);',
            # Output is not code: the graph's closing brace stays in section 1.
            "example.txt:== 1": "== 1. A graph\ndigraph {\n}",
        }
        for ref, expected in cases.items():
            got = snippets.resolve(ref)
            if got != expected:
                failures.append(f"{ref}:\n--- expected\n{expected}\n--- got\n{got}")
    for f in failures:
        print("FAIL:", f)
    print(f"docs_snippets_test: {len(cases) - len(failures)} of {len(cases)} selections right")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
