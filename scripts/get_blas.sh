#!/usr/bin/env bash
# Gets a BLAS library from PyPI once, for -DSCRATCHGRAD_BLAS=mkl or scipy-openblas (see
# cmake/ScratchgradBLAS.cmake; Debian's OpenBLAS and BLIS come from apt-get instead), and prints
# the folder to pass as -DSCRATCHGRAD_BLAS_ROOT (it holds lib/ and include/):
#   root=$(bash scripts/get_blas.sh mkl)
#   cmake -S . -B build-mkl -G Ninja -DSCRATCHGRAD_BLAS=mkl -DSCRATCHGRAD_BLAS_ROOT="$root"
# `pip download` fetches the wheels (nothing is installed); each is checked against the SHA-256
# recorded below, unpacked, and kept in ${SCRATCHGRAD_CACHE:-~/.cache/scratchgrad}/blas/.
set -euo pipefail

which=${1:-}
case $which in
  mkl)
    version=2026.2.0
    wheels=("mkl==$version" "mkl-include==$version")
    sums=("mkl-$version-py2.py3-none-manylinux_2_28_x86_64.whl eaab1875ce9f47ab3c66d5632cef06baf768c05781f2f28847bdbc4343500ed7"
          "mkl_include-$version-py2.py3-none-manylinux_2_28_x86_64.whl 889cc72057a1671fee1e9a8beb2fc4e0d222ba78c08b6d69584dae03fbec4822") ;;
  scipy-openblas)
    version=0.3.34.481.3
    wheels=("scipy-openblas32==$version")
    sums=("scipy_openblas32-$version-py3-none-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl 0595f94cd58c1f8a0d90c975621f4587337a003916b1979e834ebdf2cb5d9504") ;;
  *)
    echo "usage: $0 mkl|scipy-openblas   (Debian's openblas and blis come from apt-get)" >&2
    exit 2 ;;
esac

root=${SCRATCHGRAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scratchgrad}/blas/$which-$version
if [[ -f $root/.complete ]]; then
  echo "$root"
  exit 0
fi
mkdir -p "$(dirname "$root")"
tmp=$(mktemp -d "$(dirname "$root")/.download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "get_blas: downloading ${wheels[*]} from PyPI" >&2
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp/wheels" \
  "${wheels[@]}" >&2 || { echo "get_blas: pip download ${wheels[*]} failed (is PyPI reachable?)" >&2; exit 1; }
for pair in "${sums[@]}"; do
  set -- $pair
  if ! echo "$2  $tmp/wheels/$1" | sha256sum --check --status; then
    echo "get_blas: $1 is missing or does not have the SHA-256 recorded in $0 ($2)" >&2
    exit 1
  fi
done
mkdir -p "$tmp/root/lib" "$tmp/root/include" "$tmp/unpacked"
for wheel in "$tmp"/wheels/*.whl; do
  python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" \
    "$wheel" "$tmp/unpacked"
done
if [[ $which == mkl ]]; then
  cp -a "$tmp"/unpacked/mkl-*.data/data/lib/. "$tmp/root/lib/"
  cp -a "$tmp"/unpacked/mkl_include-*.data/data/include/. "$tmp/root/include/"
  ln -sf libmkl_rt.so.3 "$tmp/root/lib/libmkl_rt.so"  # the name the linker looks for
else
  cp -a "$tmp"/unpacked/scipy_openblas32/lib/. "$tmp/root/lib/"
  cp -a "$tmp"/unpacked/scipy_openblas32/include/. "$tmp/root/include/"
fi
cp "$tmp"/unpacked/*.dist-info/LICENSE* "$tmp/root/" 2>/dev/null || true
touch "$tmp/root/.complete"
rm -rf "$root"
mv "$tmp/root" "$root"  # only a complete folder takes the name
echo "$root"
