#!/usr/bin/env python3
"""The bits of OpenBLAS's products under the kernel family it runs now, as one hash.

scratchgrad calls two BLAS routines, sgemm and dgemm (autograd/backend/cpu/blas.cpp). Two kernel
families whose products are the same bits, on shapes that cross every blocking boundary and in
every transpose and layout, give the suite the same numbers: platforms.sh runs the whole suite once
per fingerprint, not once per family name (OpenBLAS's Zen family uses its Haswell kernels, and its
Cooperlake family is its SkylakeX one on a CPU without AVX512-BF16).

    OPENBLAS_CORETYPE=Zen python3 scripts/blas_fingerprint.py build/tests/autograd_tests
    Haswell 3f0c...      (the family OpenBLAS ran, then the hash)

The argument is a program of the build: the library is the OpenBLAS that program loads.
"""
import array
import ctypes
import hashlib
import random
import re
import subprocess
import sys

ROW_MAJOR, COL_MAJOR, NO_TRANS, TRANS = 101, 102, 111, 112
# Small, odd, and past the blocking of every x86 family (k past GEMM_Q, m past GEMM_P).
SHAPES = [(1, 1, 1), (3, 5, 7), (16, 16, 16), (17, 33, 65), (100, 37, 129), (128, 512, 32),
          (257, 129, 511), (32, 1, 300), (1, 300, 32), (520, 130, 1030), (1030, 70, 400)]


def openblas_of(program):
    """The OpenBLAS library `program` loads (ldd), so the hash is of the build's own BLAS."""
    listing = subprocess.run(["ldd", program], check=True, capture_output=True, text=True).stdout
    for line in listing.splitlines():
        match = re.match(r"\s*(\S*openblas\S*)\s+=>\s+(\S+)", line)
        if match:
            return match.group(2)
    sys.exit(f"blas_fingerprint: {program} loads no OpenBLAS (ldd lists none)")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: blas_fingerprint.py PROGRAM   (a program of the build, e.g. tests/autograd_tests)")
    lib = ctypes.CDLL(openblas_of(sys.argv[1]))
    lib.openblas_get_corename.restype = ctypes.c_char_p
    rng = random.Random(20261128)
    digest = hashlib.sha256()
    for typecode, routine, scalar in (("f", lib.cblas_sgemm, ctypes.c_float),
                                      ("d", lib.cblas_dgemm, ctypes.c_double)):
        routine.restype = None
        routine.argtypes = [ctypes.c_int] * 6 + [scalar, ctypes.c_void_p, ctypes.c_int,
                                                 ctypes.c_void_p, ctypes.c_int, scalar,
                                                 ctypes.c_void_p, ctypes.c_int]
        for m, n, k in SHAPES:
            a = array.array(typecode, (rng.uniform(-1, 1) for _ in range(m * k)))
            b = array.array(typecode, (rng.uniform(-1, 1) for _ in range(k * n)))
            for layout in (ROW_MAJOR, COL_MAJOR):
                for trans_a in (NO_TRANS, TRANS):
                    for trans_b in (NO_TRANS, TRANS):
                        # The leading dimension of each operand as it is stored.
                        rows_a = m if trans_a == NO_TRANS else k
                        rows_b = k if trans_b == NO_TRANS else n
                        cols_a, cols_b = m * k // rows_a, k * n // rows_b
                        lda = cols_a if layout == ROW_MAJOR else rows_a
                        ldb = cols_b if layout == ROW_MAJOR else rows_b
                        ldc = n if layout == ROW_MAJOR else m
                        c = array.array(typecode, bytes(m * n * a.itemsize))
                        routine(layout, trans_a, trans_b, m, n, k, 1.0, a.buffer_info()[0], lda,
                                b.buffer_info()[0], ldb, 0.0, c.buffer_info()[0], ldc)
                        digest.update(c.tobytes())
    print(lib.openblas_get_corename().decode(), digest.hexdigest()[:16])


if __name__ == "__main__":
    main()
