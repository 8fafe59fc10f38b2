#!/usr/bin/env bash
# The GPU test run in one command, on a machine with an NVIDIA GPU:
#   bash scripts/gpu_tests.sh
#
# 1. builds everything with CUDA (Release) in $BUILD_DIR (default build-gpu);
# 2. runs the GPU tests (every suite named Cuda*, in autograd_tests and nn_tests, and the training
#    loop's TrainLoop.OnAGpu*): they must run, not skip, so a machine whose GPU cannot be used
#    fails here with the reason;
# 3. runs the whole test suite (the CPU tests must pass in a CUDA build too);
# 4. trains the copy task on the GPU (`copy_task train --device cuda`, tiny preset, 1000 steps),
#    eagerly and as one CUDA graph (--cuda-graph), and checks that both reach 100% exact match, as
#    on the CPU;
# 5. appends date, GPU, passed/failed/skipped counts and the copy-task result to
#    bench/gpu/RESULTS.md.
# Exits non-zero when anything failed. Logs: bench/gpu/runs/<date>-tests/. Extra CMake options
# (a machine without the Debian packages: bench/gpu/lent_machine.sh) come in SCRATCHGRAD_CMAKE_ARGS.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

build_dir=${BUILD_DIR:-build-gpu}
stamp=$(date -u +%Y-%m-%dT%H-%M-%SZ)
out=bench/gpu/runs/$stamp-tests
mkdir -p "$out"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null) || gpu=
gpu=${gpu%%$'\n'*}  # the first GPU
gpu=${gpu:-"no nvidia-smi"}
echo "GPU: $gpu"

echo "==== build ===="
# shellcheck disable=SC2086  # SCRATCHGRAD_CMAKE_ARGS is a list of options
if ! { cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSCRATCHGRAD_CUDA=ON \
  ${SCRATCHGRAD_CMAKE_ARGS:-} &&
  cmake --build "$build_dir" --parallel "$jobs"; } >"$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log"
  echo "build failed: see $out/build.log"
  exit 1
fi

# gtest prints "[  PASSED  ] N tests.", "[  FAILED  ] N tests, ..." and "[  SKIPPED ] N tests, ...".
count() {  # count WORD LOG
  local line
  line=$(grep -m 1 -E "^\[  $1 *\] [0-9]+ test" "$2") || return 0
  [[ $line =~ \]\ ([0-9]+)\ test ]] && echo "${BASH_REMATCH[1]}"
}

passed=0 failed=0 skipped=0
for binary in autograd_tests nn_tests; do
  echo "==== $binary --gtest_filter='Cuda*:TrainLoop.OnAGpu*' ===="
  log=$out/$binary.log
  "$build_dir/tests/$binary" --gtest_filter='Cuda*:TrainLoop.OnAGpu*' 2>&1 | tee "$log"
  p=$(count PASSED "$log") f=$(count FAILED "$log") s=$(count SKIPPED "$log")
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
done
# The host-only suites (CudaLayout, CudaAllocatorBuckets) never skip; any skip means no GPU.
if ((skipped > 0)); then
  echo "GPU tests were skipped: the GPU cannot be used here (the reason is in the log above)"
  status=1
fi
((failed > 0)) && status=1

echo "==== the whole suite (ctest) ===="
(cd "$build_dir" && OPENBLAS_NUM_THREADS=1 ctest --output-on-failure --parallel "$jobs" --timeout 300) \
  >"$out/ctest.log" 2>&1
ctest_status=$?
tail -n 5 "$out/ctest.log"
ctest_summary=$(grep -E "tests passed|tests failed" "$out/ctest.log" | tail -n 1)
((ctest_status != 0)) && status=1

copy_result=""
for mode in eager graph; do
  flags=""
  [[ $mode == graph ]] && flags="--cuda-graph"
  echo "==== copy task on the GPU (tiny, 1000 steps, $mode) ===="
  # shellcheck disable=SC2086  # flags is empty or one option
  "$build_dir/examples/copy_task/copy_task" train --device cuda $flags --quiet \
    --out "$scratch/copy_$mode" --metrics-json "$out/copy_task_$mode.json" 2>&1 |
    tee "$out/copy_task_$mode.log"
  result=$(python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))
print("exact match %.1f%%, first 100%% at step %s, median %.2f ms/step"
      % (100 * m["exact_match"], m["first_perfect_step"], m["median_ms_per_step"]))
sys.exit(0 if m["exact_match"] >= 1.0 else 1)' "$out/copy_task_$mode.json" 2>&1) || status=1
  echo "copy task ($mode): $result"
  copy_result+="${copy_result:+; }$mode: $result"
done

{
  echo
  echo "## GPU test run $stamp: $gpu"
  echo
  echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)'). Logs: \`$out/\`."
  echo
  echo "- Cuda* and TrainLoop.OnAGpu* tests (autograd_tests + nn_tests): **$passed passed, $failed failed, $skipped skipped**"
  echo "- whole suite (ctest): ${ctest_summary:-see ctest.log}"
  echo "- copy task, \`copy_task train --device cuda [--cuda-graph]\` (tiny, 1000 steps): $copy_result"
  echo "- result: $( ((status == 0)) && echo PASS || echo FAIL)"
} >>bench/gpu/RESULTS.md
echo
echo "Appended to bench/gpu/RESULTS.md: $passed passed, $failed failed, $skipped skipped"
exit $status
