#!/usr/bin/env python3
"""Draws the dev WER of G2P runs against wall time, one line per run, as an SVG (no plotting
library needed): what chapter 12b shows of its 45-minute runs.

    python3 bench/g2p_dev_curve.py --out docs/images/12b_dev_wer_45min.svg \\
        "scratchgrad=runs/g2p/metrics.json" "PyTorch 2.x=torch_g2p.json"

Each input is LABEL=FILE, FILE the --metrics-json of `g2p train` or the --json of
bench/torch_g2p.py: both hold "evals", a list of {"step", "dev_wer", and the seconds of training:
"train_seconds" (scratchgrad) or "wall_seconds" (PyTorch)}.
"""
import argparse
import json
import math

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 400, 60, 20, 40, 50


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", help="LABEL=FILE")
    p.add_argument("--out", required=True)
    p.add_argument("--title", default="Dev WER (greedy, 1000 words) against training time")
    a = p.parse_args()
    series = []
    for run in a.runs:
        label, _, path = run.partition("=")
        if not path:
            p.error(f"expected LABEL=FILE, got {run!r}")
        with open(path) as f:
            evals = json.load(f)["evals"]
        if not evals:
            p.error(f"{path} has no evaluations")
        seconds = [e.get("train_seconds", e.get("wall_seconds")) for e in evals]
        series.append((label, [(s / 60, 100 * e["dev_wer"]) for s, e in zip(seconds, evals)]))
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    x_max = max(5.0, math.ceil(max(xs) / 5) * 5)
    y_lo, y_hi = math.floor(min(ys) / 5) * 5, math.ceil(max(ys) / 5) * 5
    y_hi = max(y_hi, y_lo + 5)

    def px(x):
        return LEFT + (W - LEFT - RIGHT) * x / x_max

    def py(y):
        return TOP + (H - TOP - BOTTOM) * (y_hi - y) / (y_hi - y_lo)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{a.title}</text>']
    for x in range(0, int(x_max) + 1, 5):
        out.append(f'<line x1="{px(x):.1f}" y1="{py(y_lo):.1f}" x2="{px(x):.1f}" y2="{py(y_hi):.1f}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{px(x):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{x}</text>')
    for y in range(int(y_lo), int(y_hi) + 1, 5):
        out.append(f'<line x1="{px(0):.1f}" y1="{py(y):.1f}" x2="{px(x_max):.1f}" y2="{py(y):.1f}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y}%</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" text-anchor="middle">'
               'minutes of training (evaluations included)</text>')
    for i, (label, pts) in enumerate(series):
        color = COLORS[i % len(COLORS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
        last_x, last_y = pts[-1]
        out.append(f'<text x="{W - RIGHT - 8}" y="{TOP + 18 + 18 * i}" fill="{color}" '
                   f'text-anchor="end">{label}: {last_y:.1f}% at {last_x:.0f} min</text>')
    out.append("</svg>")
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
