#!/usr/bin/env bash
# The tutorial's "output" blocks and figures, from real runs of the examples:
#   bash scripts/docs_outputs.sh              # build the examples, run them, rewrite docs/outputs
#                                             # and docs/figures (review the diff, then commit)
#   bash scripts/docs_outputs.sh --check      # run them again and fail if what is stored is stale
# BUILD_DIR (default build) is the build folder; an existing one keeps its options. The examples
# run in full (not --quick): about two minutes on 2 cores, most of it the copy-task training.
# `ctest -L docs` runs the check on the build folder it belongs to (tests/docs.cmake).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

build_dir=${BUILD_DIR:-build}
if [[ ${1:-} == --build-dir ]]; then  # used by ctest: the folder is built already
  build_dir=$2
  shift 2
else
  if ! command -v dot >/dev/null; then
    echo "docs_outputs: Graphviz is missing: apt-get install graphviz" >&2
    exit 1
  fi
  if [[ -f $build_dir/CMakeCache.txt ]]; then
    cmake -S . -B "$build_dir" >/dev/null  # keep the options of the existing build
  else
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
  fi
  cmake --build "$build_dir" --parallel "$jobs" --target examples/all
fi

exec /usr/bin/python3 scripts/docs_outputs.py --build-dir "$build_dir" "$@"
