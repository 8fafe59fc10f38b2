#!/usr/bin/env bash
# Builds the chapter examples and runs them in order, 01 to the last:
#   bash scripts/run_examples.sh
# Each example is examples/NN_name.cpp, built as build/examples/NN_name. Arguments given to this
# script are passed to every example (e.g. --quick, which each example accepts for its smoke test).
# An example that cannot run on this machine (13_cuda without a GPU) exits 77 and is skipped.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

bash scripts/install_deps.sh

build_dir=${BUILD_DIR:-build}
if [[ -f $build_dir/CMakeCache.txt ]]; then
  cmake -S . -B "$build_dir" >/dev/null  # keep the options of the existing build
else
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
# examples/all: only the targets under examples/ (and the libraries they need), not the tests.
cmake --build "$build_dir" --parallel "$jobs" --target examples/all

shopt -s nullglob
sources=(examples/[0-9][0-9]_*.cpp)
if [[ ${#sources[@]} -eq 0 ]]; then
  echo "run_examples: no examples/NN_*.cpp yet" >&2
  exit 1
fi
skipped=()
for source in "${sources[@]}"; do
  name=$(basename "$source" .cpp)
  echo
  echo "==== $name ===================================================================="
  status=0
  "$build_dir/examples/$name" "$@" || status=$?
  if [[ $status -eq 77 ]]; then
    skipped+=("$name")
  elif [[ $status -ne 0 ]]; then
    echo "run_examples: $name failed (exit status $status)" >&2
    exit "$status"
  fi
done
echo
echo "run_examples: ${#sources[@]} examples ran${skipped:+, skipped (cannot run here): ${skipped[*]}}"
