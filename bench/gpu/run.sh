#!/usr/bin/env bash
# The GPU benchmark in one command, on a machine with an NVIDIA GPU:
#   bash bench/gpu/run.sh                          # tiny, annotated and medium, 300 steps each
#   PRESETS="tiny" STEPS=500 bash bench/gpu/run.sh
#   COMPILE=1 bash bench/gpu/run.sh                # also torch.compile(mode="reduce-overhead")
#   COMPILE=1 EAGER=0 bash bench/gpu/run.sh        # torch.compile without PyTorch eager
#
# 1. builds scratchgrad with CUDA (Release) in $BUILD_DIR (default build-gpu);
# 2. for each copy-task preset, trains `copy_task train --device cuda` for $STEPS steps (eager, and
#    as one CUDA graph: float32, --bf16, --tf32) and the same model in PyTorch eager
#    (bench/gpu/torch_copy_task.py; with COMPILE=1 also torch.compile's reduce-overhead mode, whose
#    compile takes about a minute a preset) on the same GPU, one after the other, and takes the
#    median ms per training step of each;
# 3. runs bench_gpu_kernels (softmax, layer_norm, cross-entropy bandwidth vs cudaMemcpy);
# 4. appends a dated section with the GPU, the table and the raw JSON paths to
#    bench/gpu/RESULTS.md.
# Raw results stay in bench/gpu/runs/<date>/ (JSON per side and preset, logs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/env.sh

presets=${PRESETS:-tiny annotated medium}
steps=${STEPS:-300}
sync_every=${SYNC_EVERY:-25}  # both sides read the loss back every N steps (the trainer's GPU default)
build_dir=${BUILD_DIR:-build-gpu}
python=${PYTHON:-python3}
stamp=$(date -u +%Y-%m-%dT%H-%M-%SZ)
out=bench/gpu/runs/$stamp
mkdir -p "$out"
scratch=$(mktemp -d)  # checkpoints of the benchmark runs (not kept)
trap 'rm -rf "$scratch"' EXIT

command -v nvidia-smi >/dev/null && nvidia-smi -L | tee "$out/gpu.txt" || echo "(no nvidia-smi)" >"$out/gpu.txt"
gpu=$(head -n 1 "$out/gpu.txt")

# shellcheck disable=SC2086  # SCRATCHGRAD_CMAKE_ARGS: extra options (bench/gpu/lent_machine.sh)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSCRATCHGRAD_CUDA=ON \
  ${SCRATCHGRAD_CMAKE_ARGS:-} >"$out/cmake.log"
cmake --build "$build_dir" --parallel "$jobs" --target copy_task bench_gpu_kernels >"$out/build.log"
bin=$build_dir/examples/copy_task/copy_task

median_of() {  # median_of FILE: the median_ms_per_step of a JSON file, or "n/a"
  "$python" -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["median_ms_per_step"])' \
    "$1" 2>/dev/null || echo "n/a"
}

rows=""
for preset in $presets; do
  row="| $preset"
  for variant in "eager:" "graph:--cuda-graph" "graph_bf16:--cuda-graph --bf16" "graph_tf32:--cuda-graph --tf32"; do
    name=${variant%%:*} flags=${variant#*:}
    echo "==== $preset: scratchgrad $name, $steps steps on the GPU ===="
    # shellcheck disable=SC2086  # flags is a list of options
    "$bin" train --preset "$preset" --device cuda $flags --steps "$steps" --eval-every "$steps" \
      --eval-samples 20 --final-samples 20 --checkpoint-every 0 --sync-every "$sync_every" --quiet \
      --metrics-json "$out/sg_${preset}_$name.json" --out "$scratch/sg_${preset}_$name" 2>&1 |
      tee "$out/sg_${preset}_$name.log" || echo "scratchgrad $name failed on $preset"
    row+=" | $(median_of "$out/sg_${preset}_$name.json")"
  done
  torch_ms="not run"
  if [[ ${EAGER:-1} != 0 ]]; then
    echo "==== $preset: PyTorch eager, $steps steps on the GPU ===="
    "$python" bench/gpu/torch_copy_task.py --preset "$preset" --steps "$steps" --sync-every "$sync_every" \
      --json "$out/torch_$preset.json" 2>&1 | tee "$out/torch_$preset.log" || true
    torch_ms=$(median_of "$out/torch_$preset.json")
  fi
  compiled_ms="not run"
  if [[ -n "${COMPILE:-}" ]]; then
    echo "==== $preset: PyTorch torch.compile(mode=\"reduce-overhead\"), bf16 autocast ===="
    "$python" bench/gpu/torch_copy_task.py --preset "$preset" --steps "$steps" --bf16 --compile \
      --sync-every "$sync_every" --json "$out/torch_compile_bf16_$preset.json" 2>&1 |
      tee "$out/torch_compile_bf16_$preset.log" || true
    compiled_ms=$(median_of "$out/torch_compile_bf16_$preset.json")
  fi
  best_ms=$("$python" -c 'import sys
v = [float(x) for x in sys.argv[1:] if x != "n/a"]
print("%.2f" % min(v) if v else "n/a")' $(for n in eager graph graph_bf16 graph_tf32; do median_of "$out/sg_${preset}_$n.json"; done))
  ratio=$("$python" -c 'import sys
try: print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))
except ValueError: print("n/a")' "$best_ms" "$torch_ms")
  ratio_compiled=$("$python" -c 'import sys
try: print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))
except ValueError: print("n/a")' "$best_ms" "$compiled_ms")
  rows+="$row | $torch_ms | $compiled_ms | $ratio | $ratio_compiled |"$'\n'
done

echo "==== kernel bandwidth ===="
"$build_dir/bench/gpu/bench_gpu_kernels" --json "$out/kernels.json" | tee "$out/kernels.txt"

torch_version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "not installed")
{
  echo
  echo "## $stamp: $gpu"
  echo
  echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)'),"
  echo "PyTorch $torch_version, $steps training steps per preset, loss read back every $sync_every steps on"
  echo "both sides, median ms per step (lower is better; a ratio < 1 means scratchgrad is faster)."
  echo "Raw results: \`$out/\`."
  echo
  echo "| preset | sg eager | sg graph | sg graph + bf16 | sg graph + TF32 | PyTorch eager | torch.compile bf16 | sg best / PyTorch eager | sg best / torch.compile |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  printf '%s' "$rows"
  echo
  echo '```'
  cat "$out/kernels.txt"
  echo '```'
} >>bench/gpu/RESULTS.md
echo
echo "Appended to bench/gpu/RESULTS.md"
