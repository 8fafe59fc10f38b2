#!/usr/bin/env bash
# The GPU checks in one command on a lent machine whose image has CUDA, CMake, ninja and PyTorch
# but not the Debian packages, which travel unpacked in .deps/ (bench/gpu/unpack_debian_libraries.sh
# makes it on a Debian machine):
#   bash bench/gpu/lent_machine.sh [tests] [bench]     # both when none is named
# tests: scripts/gpu_tests.sh (the build, the GPU tests, the whole suite, the copy task on the GPU);
# bench: bench/gpu/run.sh with torch.compile (COMPILE=1), every preset. Both append their sections
# to bench/gpu/RESULTS.md; a copy of it, the logs and the runs' folders (as .tar.gz) go to
# $OUT (default /tmp/gpu-out), for machines that keep nothing.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
deps=$PWD/.deps/usr
lib=$deps/lib/x86_64-linux-gnu
[[ -d $deps ]] || { echo "no .deps/: run bench/gpu/unpack_debian_libraries.sh first"; exit 1; }
export CMAKE_PREFIX_PATH=$deps
export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SCRATCHGRAD_CMAKE_ARGS=${SCRATCHGRAD_CMAKE_ARGS:-"-DCMAKE_CUDA_ARCHITECTURES=90"}
out=${OUT:-/tmp/gpu-out}
mkdir -p "$out"
phases=("$@")
((${#phases[@]})) || phases=(tests bench)
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv \
  | tee "$out/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__)' | tee -a "$out/gpu.txt"
nproc | tee -a "$out/gpu.txt"
for phase in "${phases[@]}"; do
  before=$(ls bench/gpu/runs)
  start=$SECONDS
  case $phase in
    tests) bash scripts/gpu_tests.sh 2>&1 | tee "$out/tests.log" ;;
    bench) COMPILE=1 bash bench/gpu/run.sh 2>&1 | tee "$out/bench.log" ;;
    *) echo "unknown phase '$phase' (tests or bench)"; exit 2 ;;
  esac
  ((PIPESTATUS[0] == 0)) || status=1
  echo "$phase: $((SECONDS - start)) s" | tee -a "$out/gpu.txt"
  for run in $(comm -13 <(echo "$before") <(ls bench/gpu/runs)); do
    tar -czf "$out/$phase-$run.tar.gz" -C bench/gpu/runs "$run"
  done
  cp bench/gpu/RESULTS.md "$out/RESULTS.md"
done
exit $status
