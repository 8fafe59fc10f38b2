#!/usr/bin/env bash
# Unpacks Debian 12's build and test libraries into .deps/ (ignored by git), for a GPU machine
# whose image has CUDA, CMake, ninja and PyTorch but none of the Debian packages and no registry
# (bench/gpu/lent_machine.sh builds against them there). Run on a Debian 12 machine with apt:
#   bash bench/gpu/unpack_debian_libraries.sh      # about 48 MB, mostly OpenBLAS
# Only the shared libraries and headers travel: the static OpenBLAS and LAPACK are left out
# (GoogleTest is static only in Debian, so it stays).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
packages=(libopenblas-dev libopenblas0-pthread libopenblas-pthread-dev libopenblas0 libgfortran5
  libfmt-dev libfmt9 libgtest-dev libgmock-dev googletest libbenchmark-dev libbenchmark1debian
  libcli11-dev nlohmann-json3-dev libtcmalloc-minimal4)
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
(cd "$debs" && apt-get download "${packages[@]}")
rm -rf .deps
mkdir .deps
for deb in "$debs"/*.deb; do dpkg -x "$deb" .deps; done
lib=.deps/usr/lib/x86_64-linux-gnu
rm -f "$lib"/openblas-pthread/*.a "$lib"/openblas-pthread/liblapack.so*
rm -rf .deps/usr/share/doc
# Debian points libopenblas.so at the pthread build through its alternatives system, which dpkg -x
# does not run: the link CMake's find_library looks for.
ln -sf openblas-pthread/libopenblas.so "$lib/libopenblas.so"
grep -qxF '/.deps/' .git/info/exclude 2>/dev/null || echo '/.deps/' >>.git/info/exclude
du -sh .deps
