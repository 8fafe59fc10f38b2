// Float products with a narrow output (N <= 64 columns) in AVX-512 registers: the Linear layers
// of a small model and their gradients ([800, 32]·[32, 32], dx = g·W, dW = gᵀ·x over 800 rows).
//
// A row of c that narrow is 1 to 4 registers, so a tile of R rows of c (R x V registers, R up to
// 16, 14, 9 or 6 for V = 1..4) stays in registers while k runs over the whole depth: per k, V
// loads of b's row k and R x V broadcast-FMAs, nothing stored until the tile is done. a is read
// in place with any strides (a transposed view costs nothing: a weight gradient's gᵀ); b must be
// in rows (the caller copies a transposed b, at most 64 x K floats, once per product). OpenBLAS
// is far from the core's peak for these shapes (its small-matrix kernels and call overhead); a
// tile like this keeps both FMA units busy (bench_kernels, bench/NOTES.md).
//
// Used only where the CPU has AVX-512 (gemm.cpp checks narrow_gemm_fits); OpenBLAS does the rest.
#pragma once

#include <cstdint>

namespace sg::cpu {

// Whether narrow_gemm takes an [M, K]·[K, N] product here: AVX-512 on this CPU and in this build,
// 1 <= N <= 64 and either the depth or the rows small enough that b's rows stay in cache (the
// Linear products of d_model <= 64 models, forward and backward).
bool narrow_gemm_fits(int64_t M, int64_t N, int64_t K);

// c (+)= bias + a·b: a [M, K] with element (m, k) at a[m * a_rs + k * a_cs]; b [K, N] in rows,
// element (k, n) at b[k * b_rs + n]; bias [N] added to every row (nullptr: none), where a
// Linear layer would first copy it into c; c [M, N] with rows ldc apart, its old values added
// when `accumulate`. Call only where narrow_gemm_fits.
void narrow_gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_rs, int64_t a_cs,
                 const float* b, int64_t b_rs, const float* bias, float* c, int64_t ldc,
                 bool accumulate);

}  // namespace sg::cpu
