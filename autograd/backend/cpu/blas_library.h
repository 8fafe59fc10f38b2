// Which BLAS library this build uses (CMake's SCRATCHGRAD_BLAS, see cmake/ScratchgradBLAS.cmake):
// the one header that includes its CBLAS declarations. cblas_sgemm and cblas_dgemm mean the same
// in every CBLAS; what differs is where they are declared, a symbol prefix (scipy-openblas), and
// how each library sets its threads and says what it detected (blas.cpp).
#pragma once

#if defined(SCRATCHGRAD_BLAS_MKL)
#include <mkl_cblas.h>
#include <mkl_service.h>
#elif defined(SCRATCHGRAD_BLAS_BLIS)
#include <blis.h>  // BLIS's CBLAS comes with it
#elif defined(SCRATCHGRAD_BLAS_SCIPY_OPENBLAS)
#include <cblas.h>  // scipy-openblas32's: every symbol carries the prefix scipy_
#define cblas_sgemm scipy_cblas_sgemm
#define cblas_dgemm scipy_cblas_dgemm
#define openblas_get_corename scipy_openblas_get_corename
#define openblas_set_num_threads scipy_openblas_set_num_threads
#define openblas_get_num_threads scipy_openblas_get_num_threads
#elif defined(SCRATCHGRAD_BLAS_OPENBLAS)
#include <cblas.h>
#else
#error "blas_library.h: compile with the definition CMake's SCRATCHGRAD_BLAS_DEFINITION names"
#endif

#if defined(SCRATCHGRAD_BLAS_OPENBLAS) || defined(SCRATCHGRAD_BLAS_SCIPY_OPENBLAS)
#define SCRATCHGRAD_BLAS_IS_OPENBLAS 1  // OpenBLAS's core types and thread calls apply
#endif
