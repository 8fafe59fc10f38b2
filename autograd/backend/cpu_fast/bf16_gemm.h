// Products of float32 matrices read as bfloat16 (autocast's gemm_bfloat16), with AVX512-BF16.
//
// One instruction carries it: vdpbf16ps (_mm512_dpbf16_ps) takes 16 float32 sums and two registers
// of 32 bfloat16 each, multiplies the bfloat16s pair by pair (lanes 2i and 2i+1) and adds both
// products to sum i: 32 multiply-adds per instruction, twice vfmadd231ps's 16, for the same
// register width. So the operands are packed once into pairs along k, converted as they go
// (vcvtne2ps2bf16, round to nearest even):
//   a, a panel of MR rows:     per pair p of k, MR 32-bit words (a[r, 2p], a[r, 2p+1]),
//                              each broadcast to all 16 lanes for the multiply;
//   b, a panel of NR columns:  per pair p, NR 32-bit words (b[2p, j], b[2p+1, j]), NR/16 registers.
// A tile of MR x NR sums stays in registers while p runs over a block of the depth (bf16_tile.h);
// an odd K gets a zero partner. Threads take blocks of c fixed by the shape (parallel.h), each
// sum always runs over k in the same order: the bits never depend on the thread count.
//
// Every sum is the exact products of the rounded operands, summed in float32 (as the reference,
// backend/cpu/gemm.cpp, in another order): vdpbf16ps treats denormal inputs as zero and flushes
// denormal results to zero, which changes a result by less than 2^-126 per product. Where the CPU
// has no AVX512-BF16 (or the cap says so: autograd/cpu_features.h), bf16_gemm_fits is false and
// the fast backend runs the reference (rounding, then its float32 product).
#pragma once

#include <cstdint>

#include "autograd/backend/cpu_fast/tiny_gemm.h"

namespace sg::cpu {

// Whether bf16_gemm can run here: AVX512-BF16 on this CPU, allowed by the cap, in this build.
bool bf16_gemm_available();
// Whether the fast backend gives it a batch of [M, K]·[K, N] products: available, and products
// large enough that packing pays (smaller ones are faster as the reference's rounding and the
// fast float32 kernels).
bool bf16_gemm_fits(int64_t M, int64_t N, int64_t K);

// c[i] (+)= bf16(a[i])·bf16(b[i]) for i in [0, batch), a[i] [M, K] and b[i] [K, N] with any strides
// (a batch stride of 0: one matrix for the whole batch), c[i] [M, N] contiguous at c + i·M·N, its
// old values added when `accumulate`; M, N, K >= 1. Call only where bf16_gemm_available.
void bf16_gemm(int64_t batch, int64_t M, int64_t N, int64_t K, StridedMatrices a, StridedMatrices b,
               float* c, bool accumulate);

}  // namespace sg::cpu
