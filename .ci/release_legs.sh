#!/usr/bin/env bash
# The CI legs that run on a Release build: inside the fresh Debian 12 machine of .ci/run, on the
# build the README's test command made there (scripts/fresh_machine.sh --keep debian12), so that
# the one GCC Release build of a CI run is a newcomer's, not a second one made here:
#   1. the tests that need python3 (docs, exercise mode's round trip, the scripts' checks), which
#      a machine without python3 does not register, on the fast kernels,
#   2. every test again on the reference CPU kernels (SCRATCHGRAD_KERNELS=reference: the code the
#      chapters show),
#   3. exercise mode (scripts/check_exercises.sh): each stub fails its chapter with its message,
#      the solutions pass,
#   4. the platform legs that use this build (scripts/platforms.sh kernels avx2 valgrind no-avx2).
# Run as the machine's user with sudo, in ~/scratchgrad, by
#   bash scripts/fresh_machine.sh --run-in debian12 learner 'bash .ci/release_legs.sh'
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

section() { echo; echo "==== release legs: $* ==== (${SECONDS} s in)"; }

section "what these legs need beyond the README's packages: python3, valgrind, qemu-user"
sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  python3 valgrind qemu-user </dev/null >/dev/null
# Configured again, the build registers the tests that need python3; its options are kept, so
# nothing is compiled again.
cmake -S . -B build >/dev/null

section "the tests that need python3, on the fast kernels"
(cd build && OPENBLAS_NUM_THREADS=1 ctest --output-on-failure --parallel "$jobs" \
  --label-regex '^(docs|exercises|scripts)$')

section "every test again on the reference CPU kernels (SCRATCHGRAD_KERNELS=reference)"
(cd build && SCRATCHGRAD_KERNELS=reference OPENBLAS_NUM_THREADS=1 \
  ctest --output-on-failure --parallel "$jobs" --label-exclude install)

section "exercise mode: each stub fails its chapter with its message, the solutions pass"
BUILD_DIR=build bash scripts/check_exercises.sh

section "platforms on this build (OpenBLAS kernels, CPU features, valgrind, no AVX2)"
BUILD_DIR=build bash scripts/platforms.sh kernels avx2 valgrind no-avx2

section "passed"
