#!/usr/bin/env bash
# scripts/blas_fingerprint.py, which platforms.sh uses to run the suite once per distinct set of
# OpenBLAS product bits: a family gives the same fingerprint every time, and two families whose
# arithmetic differs (Haswell's FMA kernels and Sandybridge's AVX ones, both run by every AVX2
# CPU) give two. Usage: blas_fingerprint_test.sh PROGRAM (a program of the build).
set -euo pipefail
python=${PYTHON:-python3}
program=$1
fingerprint() { env OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE="$1" "$python" scripts/blas_fingerprint.py "$program"; }

haswell=$(fingerprint Haswell)
again=$(fingerprint Haswell)
sandybridge=$(fingerprint Sandybridge)
echo "Haswell: $haswell; again: $again; Sandybridge: $sandybridge"
if [[ ! $haswell =~ ^Haswell\ [0-9a-f]{16}$ || ! $sandybridge =~ ^Sandybridge\ [0-9a-f]{16}$ ]]; then
  echo "FAIL: expected '<family> <16 hex digits>' for each"
  exit 1
fi
if [[ $haswell != "$again" ]]; then
  echo "FAIL: one family gave two fingerprints"
  exit 1
fi
if [[ ${haswell#* } == "${sandybridge#* }" ]]; then
  echo "FAIL: Haswell's and Sandybridge's products gave one fingerprint"
  exit 1
fi
status=0
out=$("$python" scripts/blas_fingerprint.py /bin/sh 2>&1) || status=$?
if [[ $status -eq 0 || $out != *"loads no OpenBLAS"* ]]; then
  echo "FAIL: a program without OpenBLAS: expected an error naming it, got (exit $status): $out"
  exit 1
fi
echo "PASS"
