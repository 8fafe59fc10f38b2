// BLAS set-up: which library (CMake's SCRATCHGRAD_BLAS: OpenBLAS by default, or BLIS, oneMKL,
// scipy-openblas), what it detected on this CPU, and its threads.
//
// OpenBLAS's kernel family. Debian 12's OpenBLAS 0.3.21 does not know some recent CPUs (AMD Zen
// 4 and 5, some Xeons) and falls back to its SSE3 kernels, several times slower. Before its
// first product, scratchgrad checks which kernels OpenBLAS chose and, where they are slow and
// the user has not set OPENBLAS_CORETYPE, chooses the fast family for the CPU's instruction set
// (SkylakeX for AVX-512, Haswell for AVX2) in the running program: no restart, nothing for the
// program to call. See docs/design.md, "OpenBLAS's kernels".
#pragma once

#include <string>
#include <string_view>

namespace sg {

// "OpenBLAS", "BLIS", "oneMKL" or "scipy-openblas".
std::string blas_library_name();
// What the library chose for this CPU: OpenBLAS's kernel family ("SkylakeX", "Haswell",
// "Prescott"...), BLIS's sub-configuration ("zen3", "skx"), or MKL's version.
std::string blas_core_name();
// The core type this CPU should use ("SkylakeX", "Haswell"), or "" when OpenBLAS already uses
// fast kernels, the CPU has neither AVX-512 nor AVX2, or the library is not OpenBLAS.
std::string blas_recommended_core();
// Makes OpenBLAS use the kernel family `core` ("Haswell", "SkylakeX", "Zen", ...: the names of
// OPENBLAS_CORETYPE) from the next product on. Call it while no product runs. Throws where the
// library cannot change its kernels while the program runs (any BLAS but an OpenBLAS built with
// DYNAMIC_ARCH), and for a family OpenBLAS does not have.
void set_blas_kernels(std::string_view core);
// Where OpenBLAS uses slow kernels and OPENBLAS_CORETYPE is unset (or empty), chooses
// blas_recommended_core(). False where the kernels stay slow (the library cannot change them).
bool choose_fast_blas();
// choose_fast_blas, once per process: the CPU backends call it before their first product, and
// where it fails, one warning to stderr says how to start the program instead.
void choose_fast_blas_once();
// The library's thread count (OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS or MKL_NUM_THREADS at
// start-up).
void set_blas_threads(int threads);
int blas_threads();

}  // namespace sg
