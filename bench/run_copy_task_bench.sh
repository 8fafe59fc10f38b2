#!/usr/bin/env bash
# scratchgrad against PyTorch on the copy task, side by side in one run:
#   bench/run_copy_task_bench.sh                      # build folder "build", 5 rounds, all configs
#   bench/run_copy_task_bench.sh --build build-perf --repeats 7 --json results.json
#   bench/run_copy_task_bench.sh --configs "tiny decode" --debian   # Debian's 1.13 as a column too
#   bench/run_copy_task_bench.sh --repeats 5 --baseline 9af4eec   # a commit: built here first
#   bench/run_copy_task_bench.sh --bf16   # and mixed precision: scratchgrad's autocast beside
#                                         # PyTorch's torch.autocast (CPU, bfloat16)
#
# The configs: tiny, annotated and medium training steps, and decode (greedy decoding of 100 tiny
# sequences). The anchor is PyTorch 2.x from PyPI, what a user who picks PyTorch installs (MKL,
# oneDNN), in a virtual environment bench/torch2_venv.sh makes once and reuses; --debian adds
# Debian's python3-torch 1.13 as a second column, --no-torch2 leaves the anchor out.
#
# bench/copy_task_bench.py drives it: first each side's best settings per config (threads, the
# OpenMP wait policy, PyTorch's attention written out or F.scaled_dot_product_attention), then
# rounds A B A B... of one process per side (a neighbour's burst on this shared machine hits both
# alike; each round gives its own ratio), then torch.compile once per config, the machine's FMA
# peak (fma_peak) and scratchgrad's products' GFLOP/s. The table: per config, the median over
# rounds of each process's median time per step, sg/PyTorch (below 1 = scratchgrad faster), the
# spread of the rounds' own ratios (min / median / max), peak RSS. --baseline adds an older
# build's bench_copy_task (a build folder, or a commit, whose sources are exported with git
# archive and built in Release into build-baseline-<commit>/ once) as a "before" column.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=build
repeats=5
configs="tiny annotated medium decode"
json=""
baseline=""
torch2=1
debian=0
no_compile=0
bf16=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --configs) configs=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --debian) debian=1; shift ;;
    --no-torch2) torch2=0; shift ;;
    --no-compile) no_compile=1; shift ;;
    --bf16) bf16=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--repeats N] [--configs \"tiny annotated medium decode\"] [--json FILE] [--baseline DIR|COMMIT] [--debian] [--no-torch2] [--no-compile] [--bf16]" >&2
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

args=(--build "$build" --repeats "$repeats" --configs "$configs")
[[ -n $json ]] && args+=(--json "$json")
[[ -n $baseline ]] && args+=(--baseline "$baseline")
[[ $no_compile == 1 ]] && args+=(--no-compile)
[[ $bf16 == 1 ]] && args+=(--bf16)
if [[ $torch2 == 1 ]]; then
  args+=(--torch2 "$(bash bench/torch2_venv.sh)")
fi
if [[ $debian == 1 ]]; then
  if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    args+=(--debian /usr/bin/python3)
  else
    echo "run_copy_task_bench: --debian: Debian's python3-torch is not installed" \
         "(apt-get install python3-torch); that column is left out" >&2
  fi
fi

# OpenBLAS's kernels for this CPU (OPENBLAS_CORETYPE, see docs/design.md): scratchgrad's setting,
# harmless to PyTorch 2 (MKL) and the one Debian's PyTorch (OpenBLAS) wants too.
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  if grep -q -w avx512f /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=SkylakeX
  elif grep -q -w avx2 /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=Haswell
  fi
fi
[[ -x $build/bench/fma_peak ]] || echo "run_copy_task_bench: $build/bench/fma_peak is missing" \
  "(ninja -C $build fma_peak): the FMA peak is left out" >&2
exec /usr/bin/python3 bench/copy_task_bench.py "${args[@]}"
