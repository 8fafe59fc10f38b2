#!/usr/bin/env python3
"""Regenerates the tutorial's output blocks and figures from real runs of the examples.

    /usr/bin/python3 scripts/docs_outputs.py --build-dir build            # rewrite docs/outputs, docs/figures
    /usr/bin/python3 scripts/docs_outputs.py --build-dir build --check    # fail if they are stale

(scripts/docs_outputs.sh builds the examples first and then calls this.)

Every example runs in a fresh temporary folder, exactly as a reader runs it, and its standard output
becomes docs/outputs/<name>.txt, which the chapters include section by section
(`--8<-- "docs/outputs/07_attention.txt:== 5"`, see scripts/docs_snippets.py). The SVG files an
example writes are copied to docs/figures/; 03_autograd's Graphviz graph is rendered with `dot`.

--check reruns everything and compares with what is stored. Words must match exactly; numbers must
agree to 5% (or 1e-3), so a different CPU's last digits pass but a changed shape, message or
section does not; on lines that report time or speed (ms, GFLOP/s, "x faster") and on the
OpenBLAS kernel line, numbers and the kernel name are ignored.
"""
import argparse
import difflib
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUTS = ROOT / "docs" / "outputs"
FIGURES = ROOT / "docs" / "figures"

# (output name, command (the binary relative to the build folder, then its arguments), {file the
# run writes into its folder: the figure it becomes}, and optionally the name under which the
# run's standard error is kept: copy_task reports its progress there).
RUNS = [
    ("01_tensors", ["examples/01_tensors"], {}),
    ("02_broadcasting", ["examples/02_broadcasting"], {}),
    ("03_autograd", ["examples/03_autograd"], {"03_autograd_graph.dot": "03_autograd_graph.svg",
                                               "03_autograd_grad_graph.dot":
                                                   "03_autograd_grad_graph.svg"}),
    ("04_matmul", ["examples/04_matmul"], {}),
    ("05_mlp", ["examples/05_mlp"], {}),
    ("06_classifier", ["examples/06_classifier"], {}),
    ("07_attention", ["examples/07_attention"],
     {"07_attention_mask.svg": "07_attention_mask.svg",
      "07_attention_weights.svg": "07_attention_weights.svg"}),
    ("08_multihead", ["examples/08_multihead"], {}),
    ("09_block", ["examples/09_block"], {}),
    ("10_positions", ["examples/10_positions"],
     {"10_positions_sinusoidal.svg": "10_positions_sinusoidal.svg"}),
    ("11_encoder_decoder", ["examples/11_encoder_decoder"], {}),
    # Chapter 12: train the tiny preset, then decode with the saved model (same folder).
    ("12_copy_task_train", ["examples/copy_task/copy_task", "train", "--out", "runs/copy"],
     {"runs/copy/loss.svg": "12_loss.svg", "runs/copy/accuracy.svg": "12_accuracy.svg",
      "runs/copy/cross_attention.svg": "12_cross_attention.svg",
      "runs/copy/self_attention.svg": "12_self_attention.svg"}, "12_copy_task_progress"),
    ("12_copy_task_decode", ["examples/copy_task/copy_task", "decode", "--checkpoint",
                             "runs/copy/model.safetensors", "1 2 3 4 5 6 7 8 9 10",
                             "1 9 9 3 3 7 1 5 2 8", "4 4 4 4 6 6 6"], {}),
    ("12_copy_task_eval", ["examples/copy_task/copy_task", "eval", "--checkpoint",
                           "runs/copy/model.safetensors", "--samples", "1000"], {}),
]

NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
TIMING = re.compile(r"GFLOP/s|\bms\b|ms/step|\bx faster|[\d.]+ s\b|steps/s| kernels: ")


def skeleton(line):
    """The line with numbers replaced by '#', and its numbers."""
    return NUMBER.sub("#", line), [float(n) for n in NUMBER.findall(line)]


def same_line(old, new):
    if TIMING.search(old) or TIMING.search(new):
        if " kernels: " in old:  # the BLAS, what it detected and its threads depend on the build
            return " kernels: " in new
        return skeleton(old)[0] == skeleton(new)[0]
    (old_text, old_numbers), (new_text, new_numbers) = skeleton(old), skeleton(new)
    if old_text != new_text:
        return False
    return all(abs(a - b) <= 1e-3 + 0.05 * abs(a) for a, b in zip(old_numbers, new_numbers))


def differences(old, new):
    """Lines that differ beyond the tolerance, as a short unified diff ('' if none)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if len(old_lines) == len(new_lines):  # the same lines: list only those beyond tolerance
        bad = [f"line {i + 1}:\n  stored: {a}\n  now:    {b}"
               for i, (a, b) in enumerate(zip(old_lines, new_lines)) if not same_line(a, b)]
        return "\n".join(bad[:20])
    diff = difflib.unified_diff(old_lines, new_lines, "stored", "now", n=1, lineterm="")
    return "\n".join(list(diff)[:40])


def run_all(build, workdir, only):
    """Runs every example; returns {output name: stdout} and {figure name: text}."""
    outputs, figures = {}, {}
    for name, command, files, *stderr_name in RUNS:
        if only and not any(name.startswith(o) for o in only):
            continue
        binary = build / command[0]
        if not binary.is_file():
            sys.exit(f"docs_outputs: {binary} is missing; build the examples first "
                     f"(bash scripts/docs_outputs.sh builds them)")
        start = time.time()
        result = subprocess.run([str(binary), *command[1:]], cwd=workdir, capture_output=True,
                                text=True)
        if result.returncode != 0:
            sys.exit(f"docs_outputs: {name} failed (exit {result.returncode}):\n"
                     f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        print(f"docs_outputs: ran {name} ({time.time() - start:.1f} s)", flush=True)
        outputs[name] = result.stdout
        if stderr_name:
            outputs[stderr_name[0]] = result.stderr
        for written, figure in files.items():
            path = workdir / written
            if not path.is_file():
                sys.exit(f"docs_outputs: {name} did not write {written}")
            if path.suffix == ".dot":
                figures[figure] = subprocess.run(["dot", "-Tsvg", str(path)], check=True,
                                                 capture_output=True, text=True).stdout
            else:
                figures[figure] = path.read_text(encoding="utf-8")
    return outputs, figures


def _numbers(text):
    return [float(n) for n in NUMBER.findall(text)]


def broadcasting_figure(example_source, output):
    """docs/figures/02_broadcasting.svg: col [3, 1] + row [4] -> [3, 4], stretched operands pale.

    The operands are read from the example's source and the result from its output, and they must
    agree (col[i] + row[j] == result[i][j]), so the picture cannot drift from the program."""
    col = _numbers(re.search(r"Tensor col = sg::tensor\((.*?)\);", example_source).group(1))
    row = _numbers(re.search(r"Tensor row = sg::tensor\((.*?)\);", example_source).group(1))
    printed = re.search(r"col \[\d+, 1\] \+ row \[\d+\] -> \[\d+, \d+\]\n(tensor\(.*?\]\]\))",
                        output, re.S).group(1)
    result = _numbers(printed)
    R, C = len(col), len(row)
    if len(result) != R * C or any(abs(col[i] + row[j] - result[i * C + j]) > 1e-6
                                   for i in range(R) for j in range(C)):
        sys.exit("docs_outputs: 02_broadcasting's printed table is not col + row")
    cell, gap, top = 34, 46, 40
    width = 3 * C * cell + 2 * gap + 20

    def grid(x0, values, real, title, caption):
        parts = [f'<text x="{x0 + C * cell / 2}" y="{top - 12}" text-anchor="middle" '
                 f'font-size="13">{title}</text>',
                 f'<text x="{x0 + C * cell / 2}" y="{top + R * cell + 16}" text-anchor="middle" '
                 f'font-size="11" fill="#555">{caption}</text>']
        for i in range(R):
            for j in range(C):
                fill, ink = ("#c6dbef", "#08306b") if real(i, j) else ("#f4f8fc", "#9ab")
                parts.append(f'<rect x="{x0 + j * cell}" y="{top + i * cell}" width="{cell}" '
                             f'height="{cell}" fill="{fill}" stroke="#6b8fb5"/>')
                parts.append(f'<text x="{x0 + j * cell + cell / 2}" y="{top + i * cell + cell / 2 + 4}" '
                             f'text-anchor="middle" font-size="12" fill="{ink}">'
                             f'{values(i, j):g}</text>')
        return parts

    x1, x2, x3 = 10, 10 + C * cell + gap, 10 + 2 * (C * cell + gap)
    mid = top + R * cell / 2 + 6
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + R * cell + 50}" '
             f'font-family="sans-serif">']
    parts += grid(x1, lambda i, j: col[i], lambda i, j: j == 0, f"col [{R}, 1]",
                  f"expand: strides [1, 0]")
    parts += grid(x2, lambda i, j: row[j], lambda i, j: i == 0, f"row [{C}]",
                  f"expand: strides [0, 1]")
    parts += grid(x3, lambda i, j: result[i * C + j], lambda i, j: True, f"col + row [{R}, {C}]",
                  "a new tensor")
    parts.append(f'<text x="{x2 - gap / 2}" y="{mid}" text-anchor="middle" font-size="22">+</text>')
    parts.append(f'<text x="{x3 - gap / 2}" y="{mid}" text-anchor="middle" font-size="22">=</text>')
    parts.append(f'<text x="10" y="{top + R * cell + 40}" font-size="11" fill="#555">dark: stored '
                 f'elements; pale: the same elements seen again through a stride of 0</text>')
    return "\n".join(parts + ["</svg>"]) + "\n"


def main():
    parser = argparse.ArgumentParser(description="regenerate or check docs/outputs and docs/figures")
    parser.add_argument("--build-dir", type=pathlib.Path, default=ROOT / "build")
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--only", nargs="*", default=[], help="output names to run (prefixes)")
    args = parser.parse_args()
    if shutil.which("dot") is None:
        sys.exit("docs_outputs: Graphviz's dot is missing: apt-get install graphviz")
    build = args.build_dir.resolve()
    with tempfile.TemporaryDirectory(prefix="sg-docs-") as tmp:
        outputs, figures = run_all(build, pathlib.Path(tmp), args.only)
    if "02_broadcasting" in outputs:
        source = (ROOT / "examples" / "02_broadcasting.cpp").read_text(encoding="utf-8")
        figures["02_broadcasting.svg"] = broadcasting_figure(source, outputs["02_broadcasting"])

    stored = [(OUTPUTS / f"{name}.txt", text) for name, text in outputs.items()]
    stored += [(FIGURES / name, text) for name, text in figures.items()]
    if not args.check:
        OUTPUTS.mkdir(parents=True, exist_ok=True)
        FIGURES.mkdir(parents=True, exist_ok=True)
        for path, text in stored:
            path.write_text(text, encoding="utf-8")
        print(f"docs_outputs: wrote {len(outputs)} outputs to {OUTPUTS.relative_to(ROOT)}/ and "
              f"{len(figures)} figures to {FIGURES.relative_to(ROOT)}/")
        return 0

    stale = []
    for path, text in stored:
        rel = path.relative_to(ROOT)
        if not path.is_file():
            stale.append(f"{rel}: missing")
            continue
        diff = differences(path.read_text(encoding="utf-8"), text)
        if diff:
            stale.append(f"{rel}: differs from a fresh run:\n{diff}")
    for s in stale:
        print(f"docs_outputs: {s}", file=sys.stderr)
    if stale:
        print(f"docs_outputs: {len(stale)} of {len(stored)} files are stale; regenerate them with "
              f"`bash scripts/docs_outputs.sh` and review the diff", file=sys.stderr)
        return 1
    print(f"docs_outputs: all {len(stored)} outputs and figures match a fresh run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
