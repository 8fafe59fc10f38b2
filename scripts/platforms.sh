#!/usr/bin/env bash
# The platform matrix (docs/design.md, "Platforms"): the machines, BLAS kernels and compilers
# learners bring, checked on one Debian x86-64 machine. Run by .ci/run after the main build, or
# by hand:
#   bash scripts/platforms.sh                 # every leg
#   bash scripts/platforms.sh kernels clang   # some of them
# Legs:
#   kernels   the whole suite (build/) once per OpenBLAS kernel family: Haswell (Intel AVX2
#             laptops), Zen (AMD Zen 1-3), SkylakeX, Cooperlake, Sandybridge; a family whose
#             products are bit for bit those of one already run (the main run's first) is not
#             run twice (scripts/blas_fingerprint.py); SkylakeX and Cooperlake only where the CPU
#             has AVX-512 (elsewhere they stop at an illegal instruction)
#   avx2      the whole suite with SCRATCHGRAD_CPU_FEATURES=avx2: every AVX-512 path off (on a
#             CPU without AVX-512 that is the main run, not run twice)
#   valgrind  the CPU-kernel tests under valgrind's memcheck, which emulates a CPU without
#             AVX-512 (AVX2 and FMA) natively: every kernel file's portable path, memory-checked
#   no-avx2   a program started on an emulated CPU without AVX2 (qemu-x86_64 -cpu Nehalem) is
#             refused with the reason, not killed by an illegal instruction
#   arm64     the library, examples and tests cross-compiled for ARM64 (Debian's cross compiler,
#             cmake/toolchains/aarch64-linux-gnu.cmake), the chapter tests run under qemu-aarch64
#   clang     Clang 16 with libc++ 16 under AddressSanitizer, LeakSanitizer and UBSan, warnings
#             as errors, every test but the install test and the end-to-end runs (bench/ left
#             out: Debian's Google Benchmark is built for libstdc++)
# A leg whose tools are missing fails (install them: scripts/install_deps.sh --platforms); it
# never skips quietly. BUILD_DIR (default build) is the main build, made by scripts/test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

build_dir=${BUILD_DIR:-build}
legs=("$@")
[[ ${#legs[@]} -gt 0 ]] || legs=(kernels avx2 valgrind no-avx2 arm64 clang)

section() { echo; echo "==== platforms: $* ==== ($(date +%T))"; }
need() {
  for tool in "$@"; do
    if ! command -v "$tool" >/dev/null; then
      echo "platforms: '$tool' is missing (bash scripts/install_deps.sh --platforms)" >&2
      exit 1
    fi
  done
}
# Whether this CPU runs AVX-512 (F, BW, VL, DQ: what OpenBLAS's SkylakeX kernels and the fast
# kernels' AVX-512 paths use). CI's machines vary: some have it, some do not.
has_avx512() {
  local flags
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) || return 1
  [[ " $flags " == *" avx512f "* && " $flags " == *" avx512bw "* && " $flags " == *" avx512vl "* &&
     " $flags " == *" avx512dq "* ]]
}
main_build() {
  if [[ ! -x $build_dir/tests/autograd_tests ]]; then
    echo "platforms: no main build in $build_dir (bash scripts/test.sh first)" >&2
    exit 1
  fi
}
# ctest over the main build, one BLAS thread per test, the install test left out (it rebuilds a
# project against a fresh install: nothing in it depends on the kernels).
suite() { (cd "$build_dir" && env "$@" OPENBLAS_NUM_THREADS=1 ctest --parallel "$jobs" \
  --label-exclude install --output-on-failure --exclude-regex "$kernel_blind"); }
# The longest tests that check no kernel, left to the main and reference runs: checkpoint files
# mutated byte by byte, reading and writing PyTorch's files, the divergence finder (a tool run
# against PyTorch, at a tolerance), ranks launched from the command line. About a minute of test
# time in each of the six runs below.
kernel_blind='CheckpointFuzz|SerializeTorchInterop|find_divergence|distributed\.copy_task\.cli$'

# "<family> <hash>": the OpenBLAS family the build's programs run under these variables, and the
# bits of its products.
blas_fingerprint() {
  env "$@" OPENBLAS_NUM_THREADS=1 python3 scripts/blas_fingerprint.py "$build_dir/tests/autograd_tests"
}

leg_kernels() {
  main_build
  need python3
  # A family whose products are the bits of one already run gives the suite the same numbers:
  # the suite runs once per fingerprint of sgemm and dgemm (scripts/blas_fingerprint.py), the main
  # run's (OpenBLAS's choice for this CPU, or OPENBLAS_CORETYPE) first. OpenBLAS's Zen family uses
  # its Haswell kernels; on a CPU without AVX512-BF16 its Cooperlake family is SkylakeX.
  # The main run's family is the one its programs report: where OpenBLAS falls back to old
  # kernels on a CPU it does not know, scratchgrad switches to a fast family as it starts.
  local probe main_core= out family seen
  probe=$(OPENBLAS_NUM_THREADS=1 "$build_dir/examples/04_matmul" --quick)
  [[ $probe =~ OpenBLAS\ kernels:\ ([A-Za-z0-9]+), ]] && main_core=${BASH_REMATCH[1]}
  out=$(blas_fingerprint ${main_core:+OPENBLAS_CORETYPE=$main_core})
  read -r family seen <<<"$out"
  local -A run_by=(["$seen"]="$family (the main run)")
  for core in Haswell Zen SkylakeX Cooperlake Sandybridge; do
    if [[ $core == SkylakeX || $core == Cooperlake ]] && ! has_avx512; then
      section "OpenBLAS's $core kernels: they need AVX-512, which this CPU has not (not run)"
      continue
    fi
    out=$(blas_fingerprint OPENBLAS_CORETYPE=$core)
    read -r family seen <<<"$out"
    if [[ -n ${run_by[$seen]:-} ]]; then
      section "OpenBLAS's $core kernels ($family): the products of ${run_by[$seen]}, bit for bit (not run again)"
      continue
    fi
    run_by[$seen]=$core
    section "the whole suite on OpenBLAS's $core kernels ($family)"
    suite OPENBLAS_CORETYPE=$core
  done
}

leg_avx2() {
  main_build
  if ! has_avx512; then
    section "the fast kernels' portable paths: the main run took them (this CPU has no AVX-512)"
    return
  fi
  section "the whole suite on the fast kernels' portable paths (SCRATCHGRAD_CPU_FEATURES=avx2)"
  suite SCRATCHGRAD_CPU_FEATURES=avx2
}

# The tests of every CPU kernel file (backend/cpu, backend/cpu_fast) and the ops that reach them.
# Under valgrind the CPU has no AVX-512, so these take the portable paths; the products of the
# thread-count test are too big to emulate and stay out (the avx2 leg runs it natively).
leg_valgrind() {
  main_build
  need valgrind
  section "CPU-kernel tests under valgrind memcheck (a CPU with AVX2 and no AVX-512)"
  # tcmalloc is the programs' malloc: valgrind must replace it (somalloc), and new/new[] are one
  # function in tcmalloc, so the "mismatched free" check cannot tell them apart. The pool test
  # that sets an address-space limit is left out: valgrind itself runs out of memory under it, and
  # so is the one that times hundreds of threads (valgrind runs one thread at a time).
  local valgrind=(valgrind --quiet --error-exitcode=9 --soname-synonyms=somalloc=*tcmalloc*
    --show-mismatched-frees=no)
  OPENBLAS_NUM_THREADS=1 "${valgrind[@]}" "$build_dir/tests/autograd_tests" \
    --gtest_filter='Backend*:Softmax*:Reduce*:Masking*:Matmul*-BackendParallelFor.Products*:BackendMalloc*:BackendParallelThreads.APool*:BackendParallelThreads.MoreThreads*'
  OPENBLAS_NUM_THREADS=1 "${valgrind[@]}" "$build_dir/tests/nn_tests" \
    --gtest_filter='LayerNorm*:Attention*:Loss*:CrossEntropy*:Adam*:Linear*'
}

leg_no_avx2() {
  main_build
  need qemu-x86_64
  section "a CPU without AVX2 (qemu-x86_64 -cpu Nehalem): refused with the reason"
  local out status=0
  out=$(qemu-x86_64 -cpu Nehalem "$build_dir/examples/01_tensors" 2>&1) || status=$?
  if [[ $status -eq 0 || $out != *"this build's CPU kernels need AVX2 and FMA"* ]]; then
    echo "platforms: expected a refusal naming AVX2 and FMA, got (exit $status):" >&2
    echo "$out" | tail -5 >&2
    exit 1
  fi
  echo "refused as expected (exit $status): $(grep -m1 "CPU kernels need" <<<"$out")"
}

leg_arm64() {
  need aarch64-linux-gnu-g++ qemu-aarch64
  section "ARM64: cross build (build-arm64) and the chapter tests under qemu-aarch64"
  # Without precompiled headers: the one build that proves every file includes what it uses
  # (cmake/ScratchgradPrecompiledHeaders.cmake).
  cmake --fresh -S . -B build-arm64 -G Ninja -DCMAKE_BUILD_TYPE=Release \
    --toolchain cmake/toolchains/aarch64-linux-gnu.cmake -DSCRATCHGRAD_WERROR=ON \
    -DSCRATCHGRAD_BUILD_BENCH=OFF -DSCRATCHGRAD_CUDA=OFF -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON
  cmake --build build-arm64 --parallel "$jobs"
  # Every chapter's tests (the emulator makes each 10-20x slower). Left to the native legs: the
  # end-to-end training runs (the copy task's and G2P's, the last chapter example), the MPI
  # tests, the avx2.* and avx512.* repeats (an ARM CPU has no AVX-512 path to turn off), the
  # wide model of the thread-count test (the products' own thread-count test stays), the pool test
  # that sets an address-space limit (qemu-user keeps such limits for itself, or runs out of memory
  # under them), the pool test that times hundreds of threads (it would time the emulator), and
  # the tests that a shell script drives (it starts the programs itself, not through the
  # emulator).
  # By name as well as by label: labels of tests discovered at test time were not always seen.
  (cd build-arm64 && OPENBLAS_NUM_THREADS=1 ctest --parallel "$jobs" --output-on-failure \
    --label-exclude "install|e2e|distributed|avx2" \
    --exclude-regex '\.cli$|find_divergence|kill_resume|threads_from_environment|^docs\.|^exercises\.|^avx2\.|^avx512\.|G2pTraining\.|WideModelSteps|example\.11_|example\.strict_arguments|ParallelThreads\.APool|ParallelThreads\.MoreThreads' \
    --timeout 900)
}

# One build serves two checks that each took a whole build and test run: the second compiler and
# standard library (Clang 16, libc++ 16, its warnings as errors), and the sanitizers (Clang's
# UBSan checks more than GCC's: float-to-integer conversions out of range, for one). -O1 without
# -g: UBSan's reports carry their file and line without debug information, and line tables cost
# a tenth of the build (measured on one test file). The libraries' files compile as a unity build,
# 8 to a batch (tests/CMakeLists.txt keeps test files one by one): a quarter less time. The
# install test and the end-to-end training runs are left out (minutes each under ASan; the
# Release legs run them).
leg_clang() {
  need clang++-16
  section "Clang 16 with libc++ 16, AddressSanitizer + LeakSanitizer + UBSan, warnings as errors (build-clang)"
  CC=clang-16 CXX=clang++-16 cmake --fresh -S . -B build-clang -G Ninja \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1" \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 \
    -DSCRATCHGRAD_SANITIZE=address,undefined -DSCRATCHGRAD_WERROR=ON -DSCRATCHGRAD_CUDA=OFF \
    -DSCRATCHGRAD_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="-stdlib=libc++" \
    -DCMAKE_EXE_LINKER_FLAGS="-stdlib=libc++"
  cmake --build build-clang --parallel "$jobs"
  (
    cd build-clang
    export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:check_initialization_order=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    OPENBLAS_NUM_THREADS=1 ctest --parallel "$jobs" --output-on-failure --label-exclude "install|e2e"
  )
}

for leg in "${legs[@]}"; do
  case $leg in
    kernels | avx2 | valgrind | no-avx2 | arm64 | clang) "leg_${leg//-/_}" ;;
    *) echo "platforms: unknown leg '$leg' (kernels avx2 valgrind no-avx2 arm64 clang)" >&2; exit 2 ;;
  esac
done
section "all legs passed: ${legs[*]}"
