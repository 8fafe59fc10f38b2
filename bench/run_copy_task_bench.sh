#!/usr/bin/env bash
# scratchgrad against PyTorch on the copy task, side by side in one run:
#   bench/run_copy_task_bench.sh                      # build folder "build", 3 repeats, all configs
#   bench/run_copy_task_bench.sh --build build-perf --repeats 5 --json results.json
#   bench/run_copy_task_bench.sh --configs "tiny decode" --baseline /tmp/old/build
#   bench/run_copy_task_bench.sh --repeats 5 --baseline 9af4eec   # a commit: built here first
#
# For each repeat, for each config (tiny, annotated, medium training steps; decode = greedy
# decoding of 100 tiny sequences), it runs bench_copy_task (scratchgrad) and then
# torch_copy_task.py (PyTorch), one process each: A B A B ..., so a neighbour's burst of work on
# this shared machine hits both sides alike. Each process reports its median time per step over
# its own timed steps and its peak RSS; the table shows, per config, the median over repeats of
# those medians, the ratio scratchgrad / PyTorch (below 1 = scratchgrad faster), the spread of
# each round's own ratio (min / median / max), and the ratio of peak RSS. --baseline adds a third
# program to every round, for before/after tables: an older build's bench_copy_task (a build
# folder), or a commit, whose sources are exported (git archive) and built in Release into
# build-baseline-<commit>/ once (reused by later runs); the table then has a "before" column and
# the ratio now / before. Without PyTorch (no `import torch` for /usr/bin/python3) it says so and
# reports scratchgrad alone.
#
# Same environment for every side: 2 threads (torch.set_num_threads(2); OpenBLAS 2 threads,
# which scratchgrad uses only for products above 16 MFLOP), OpenBLAS's fast kernels for this CPU
# (OPENBLAS_CORETYPE, see docs/design.md), and OMP_WAIT_POLICY=PASSIVE so that idle OpenMP threads
# sleep instead of spinning against OpenBLAS's (docs/design.md, "Performance").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=build
repeats=3
configs="tiny annotated medium decode"
json=""
baseline=""
python=/usr/bin/python3  # Debian's, with python3-torch; not a virtualenv's
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--repeats N] [--configs \"tiny annotated medium decode\"] [--json FILE] [--baseline DIR|COMMIT]" >&2
       exit 2 ;;
  esac
done

sg_bin=$build/bench/bench_copy_task
if [[ ! -x $sg_bin ]]; then
  echo "run_copy_task_bench: $sg_bin is missing; build it first: ninja -C $build bench_copy_task" >&2
  exit 1
fi
# A commit as the baseline: its sources built once into their own folder, in Release like $build
# (examples on: bench_copy_task is built on the copy task's library).
if [[ -n $baseline && ! -d $baseline ]]; then
  if ! commit=$(git rev-parse --verify --quiet "$baseline^{commit}"); then
    echo "run_copy_task_bench: --baseline $baseline is neither a build folder nor a commit" >&2
    exit 2
  fi
  base_dir=build-baseline-${commit:0:12}
  if [[ ! -x $base_dir/build/bench/bench_copy_task ]]; then
    echo "run_copy_task_bench: building the baseline ${commit:0:12} in $base_dir" >&2
    rm -rf "$base_dir/src"
    mkdir -p "$base_dir/src"
    git archive "$commit" | tar -x -C "$base_dir/src"
    launcher=()
    if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
    cmake -S "$base_dir/src" -B "$base_dir/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSCRATCHGRAD_CUDA=OFF -DSCRATCHGRAD_BUILD_TESTS=OFF -DSCRATCHGRAD_BUILD_EXAMPLES=ON \
      -DSCRATCHGRAD_BUILD_BENCH=ON "${launcher[@]}" >/dev/null
    cmake --build "$base_dir/build" --target bench_copy_task >/dev/null
  fi
  baseline=$base_dir/build
fi
if [[ -n $baseline && ! -x $baseline/bench/bench_copy_task ]]; then
  echo "run_copy_task_bench: $baseline/bench/bench_copy_task is missing" >&2
  exit 1
fi

have_torch=1
if ! "$python" -c "import torch" 2>/dev/null; then
  have_torch=0
  echo "run_copy_task_bench: PyTorch is not installed for $python (apt-get install python3-torch);" \
       "reporting scratchgrad alone" >&2
fi

# The environment both sides run in.
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  if grep -q -w avx512f /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=SkylakeX
  elif grep -q -w avx2 /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=Haswell
  fi
fi
export OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE

out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT
echo "copy-task benchmark: $repeats repeats of [$configs]; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}," \
     "2 threads, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= repeats; r++)); do
  for c in $configs; do
    echo "  round $r/$repeats: $c" >&2
    "$sg_bin" --config "$c" --threads 2 --json "$out_dir/scratchgrad.$c.$r.json" >/dev/null
    if [[ $have_torch == 1 ]]; then
      "$python" bench/torch_copy_task.py --config "$c" --threads 2 \
        --json "$out_dir/pytorch.$c.$r.json" >/dev/null
    fi
    if [[ -n $baseline ]]; then
      "$baseline/bench/bench_copy_task" --config "$c" --threads 2 \
        --json "$out_dir/baseline.$c.$r.json" >/dev/null
    fi
  done
done

"$python" - "$out_dir" "$configs" "$json" <<'EOF'
import datetime, glob, json, os, statistics, sys

out_dir, configs, json_path = sys.argv[1], sys.argv[2].split(), sys.argv[3]
def load(side, config):
    runs = [json.load(open(p)) for p in sorted(glob.glob(f"{out_dir}/{side}.{config}.*.json"))]
    if not runs:
        return None
    return {"median_ms": statistics.median(r["median_ms"] for r in runs),
            "per_run_median_ms": [r["median_ms"] for r in runs],
            "peak_rss_mib": max(r["peak_rss_mib"] for r in runs)}

what = {"tiny": "tiny training step", "annotated": "annotated training step",
        "medium": "medium training step", "decode": "tiny greedy decode, 100 sequences"}
rows, table = [], []
for c in configs:
    sg, pt, base = load("scratchgrad", c), load("pytorch", c), load("baseline", c)
    row = {"config": c, "what": what.get(c, c), "scratchgrad": sg, "pytorch": pt}
    if base:
        row["baseline"] = base
    if pt:
        row["time_ratio"] = sg["median_ms"] / pt["median_ms"]
        row["rss_ratio"] = sg["peak_rss_mib"] / pt["peak_rss_mib"]
        # Each round's own ratio (its two runs are seconds apart): their spread shows how much a
        # neighbour's burst moved one side of one round.
        row["round_ratios"] = [a / b for a, b in zip(sg["per_run_median_ms"],
                                                     pt["per_run_median_ms"])]
    rows.append(row)

def ms(x):
    return f"{x:.1f} ms" if x >= 10 else f"{x:.2f} ms"
head = ["config", "scratchgrad", "PyTorch", "sg/PyTorch", "rounds' ratios (min, median, max)",
        "RSS sg", "RSS PyTorch", "RSS ratio"]
def spread(ratios):
    return (f"{min(ratios):.2f} / {statistics.median(ratios):.2f} / {max(ratios):.2f}"
            if ratios else "n/a")
if any("baseline" in r for r in rows):
    head[1:1] = ["before"]
    head[3:3] = ["now/before"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for r in rows:
    sg, pt = r["scratchgrad"], r["pytorch"]
    cells = [r["what"]]
    if "baseline" in r:
        cells.append(ms(r["baseline"]["median_ms"]))
    cells.append(ms(sg["median_ms"]))
    if "baseline" in r:
        r["time_ratio_to_baseline"] = sg["median_ms"] / r["baseline"]["median_ms"]
        cells.append(f"{r['time_ratio_to_baseline']:.2f}x")
    cells += [ms(pt["median_ms"]) if pt else "n/a",
              f"**{r['time_ratio']:.2f}x**" if pt else "n/a", spread(r.get("round_ratios", [])),
              f"{sg['peak_rss_mib']:.0f} MiB",
              f"{pt['peak_rss_mib']:.0f} MiB" if pt else "n/a",
              f"{r['rss_ratio']:.2f}x" if pt else "n/a"]
    print("| " + " | ".join(cells) + " |")
sample = glob.glob(f"{out_dir}/scratchgrad.*.json")
meta = json.load(open(sample[0])) if sample else {}
result = {"benchmark": "copy_task", "date": datetime.date.today().isoformat(),
          "cpu": meta.get("cpu"), "hardware_threads": meta.get("hardware_threads"),
          "blas_core": meta.get("blas_core"), "threads": 2,
          "repeats": len(rows[0]["scratchgrad"]["per_run_median_ms"]) if rows else 0,
          "load_average": open("/proc/loadavg").read().split()[:3],
          "pytorch": bool(rows and rows[0]["pytorch"]), "rows": rows}
if json_path:
    with open(json_path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"\nJSON: {json_path}")
EOF
