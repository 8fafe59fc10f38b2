// Batches of tiny float products (attention over short sequences) with AVX-512 masked vectors.
//
// The tiny copy-task model multiplies 320 pairs of [11, 8]·[8, 11] matrices per attention matmul
// (one per head and sequence), 36 such matmuls per training step. OpenBLAS's small-matrix kernels
// take 50-100 ns per pair, most of it the call itself; the arithmetic is ~1000 multiply-adds.
// A row of up to 16 floats is one AVX-512 register, and masked loads and stores touch only its
// first N lanes, so a whole [M, N] output is M registers, kept while k runs: per k, one (masked)
// load of b's row and one broadcast-FMA per row of a. No packing, no partial-tile buffers.
//
// Used only where it is measured to win (bench_kernels, bench/NOTES.md) and where the CPU has
// AVX-512; everything else goes to OpenBLAS (gemm.cpp).
#pragma once

#include <cstdint>

namespace sg::cpu {

// A batch of matrices in memory: matrix i's element (r, c) is
// data[i * batch_stride + r * row_stride + c * col_stride] (batch_stride 0: one matrix for all).
struct StridedMatrices {
  const float* data;
  int64_t batch_stride, row_stride, col_stride;
};

// Whether tiny_gemm can take a batch of [M, K]·[K, N] products here: the CPU has AVX-512, the
// build has the kernel, and M, N, K are within its limits.
bool tiny_gemm_fits(int64_t M, int64_t N, int64_t K);

// c[i] (+)= a[i]·b[i] for i in [0, batch); c[i] is [M, N], contiguous, at c + i * M * N.
// Call only where tiny_gemm_fits(M, N, K).
void tiny_gemm(int64_t batch, int64_t M, int64_t N, int64_t K, StridedMatrices a, StridedMatrices b,
               float* c, bool accumulate);

}  // namespace sg::cpu
