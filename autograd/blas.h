// BLAS set-up: which library (CMake's SCRATCHGRAD_BLAS: OpenBLAS by default, or BLIS, oneMKL,
// scipy-openblas), what it detected on this CPU, and its threads.
//
// OpenBLAS's core type. Debian's OpenBLAS 0.3.21 does not recognise some recent Xeons and falls
// back to SSE3 kernels, several times slower. The fix is OPENBLAS_CORETYPE in the environment
// BEFORE the process starts (OpenBLAS reads it when it loads). See docs/design.md, "OpenBLAS core
// type".
//
//   int main(int argc, char** argv) {
//     sg::ensure_fast_blas(argc, argv);   // first line of every scratchgrad program
//     ...
#pragma once

#include <string>

namespace sg {

// "OpenBLAS", "BLIS", "oneMKL" or "scipy-openblas".
std::string blas_library_name();
// What the library chose for this CPU: OpenBLAS's kernel family ("SkylakeX", "Haswell",
// "Prescott"...), BLIS's sub-configuration ("zen3", "skx"), or MKL's version.
std::string blas_core_name();
// The core type this CPU should use ("SkylakeX", "Haswell"), or "" when OpenBLAS already uses
// fast kernels, the CPU has neither AVX-512 nor AVX2, or the library is not OpenBLAS.
std::string blas_recommended_core();
// If OpenBLAS chose slow kernels and OPENBLAS_CORETYPE is unset, sets it and re-executes the
// program with the same arguments (so the user never has to know). Set SCRATCHGRAD_NO_REEXEC=1
// to turn this off; then a warning is printed instead.
void ensure_fast_blas(int argc, char** argv);
// Prints one warning to stderr the first time it is called in a process running slow kernels.
void warn_once_if_blas_is_slow();
// The library's thread count (OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS or MKL_NUM_THREADS at
// start-up).
void set_blas_threads(int threads);
int blas_threads();

}  // namespace sg
