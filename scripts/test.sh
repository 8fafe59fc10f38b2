#!/usr/bin/env bash
# Builds everything and runs every test:
#   bash scripts/test.sh                           # build/ (Release, Ninja)
#   bash scripts/test.sh -DSCRATCHGRAD_WERROR=ON   # extra arguments go to cmake
#   BUILD_DIR=build-debug bash scripts/test.sh -DCMAKE_BUILD_TYPE=Debug
# The configuration starts fresh each time (cmake --fresh: no options left over from an earlier
# run), while compiled objects are reused, so a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

bash scripts/install_deps.sh

build_dir=${BUILD_DIR:-build}
cmake --fresh -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" --parallel "$jobs"

# Tests run in parallel, so one OpenBLAS thread each keeps the cores from being oversubscribed.
cd "$build_dir"
OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} ctest --output-on-failure --parallel "$jobs"
