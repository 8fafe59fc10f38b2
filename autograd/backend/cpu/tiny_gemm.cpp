// tiny_gemm (tiny_gemm.h): the kernel functions carry gnu::target("avx512f"), so this file is
// compiled like every other kernel and only they use AVX-512 instructions; tiny_gemm_fits checks
// the CPU before anything calls them.
#include "autograd/backend/cpu/tiny_gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define SG_TINY_GEMM_AVX512 1
#include <immintrin.h>
#endif

#include "autograd/error.h"

namespace sg::cpu {

#ifdef SG_TINY_GEMM_AVX512

namespace {

constexpr int64_t kMaxRows = 16;  // M, N, K: a row of b or c is one 16-float register
constexpr int64_t kMaxCols = 16;
constexpr int64_t kMaxDepth = 16;

constexpr int kTileRows = 8;  // rows of c held in registers at once (8 accumulators)

// Rows [0, R) of c (+)= a·b, b given as K rows of 16 floats (row stride b_rs) of which the mask's
// lanes are real.
template <int R>
[[gnu::target("avx512f"), gnu::always_inline]] inline void tile(const float* a, int64_t a_rs,
                                                                int64_t a_cs, const float* b,
                                                                int64_t b_rs, __mmask16 cols,
                                                                int64_t K, float* c, int64_t ldc,
                                                                bool accumulate) {
  __m512 sum[R];
  for (int r = 0; r < R; ++r) sum[r] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 b_row = _mm512_maskz_loadu_ps(cols, b + k * b_rs);  // lanes >= N read nothing
    for (int r = 0; r < R; ++r) {
      sum[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * a_rs + k * a_cs]), b_row, sum[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (accumulate) sum[r] = _mm512_add_ps(sum[r], _mm512_maskz_loadu_ps(cols, c + r * ldc));
    _mm512_mask_storeu_ps(c + r * ldc, cols, sum[r]);
  }
}

// The last rows of c (fewer than kTileRows): the tile for exactly that many.
[[gnu::target("avx512f")]] void tail_tile(int64_t rows, const float* a, int64_t a_rs, int64_t a_cs,
                                          const float* b, int64_t b_rs, __mmask16 cols, int64_t K,
                                          float* c, int64_t ldc, bool accumulate) {
  switch (rows) {
    case 1:
      return tile<1>(a, a_rs, a_cs, b, b_rs, cols, K, c, ldc, accumulate);
    case 2:
      return tile<2>(a, a_rs, a_cs, b, b_rs, cols, K, c, ldc, accumulate);
    case 3:
      return tile<3>(a, a_rs, a_cs, b, b_rs, cols, K, c, ldc, accumulate);
    case 4:
      return tile<4>(a, a_rs, a_cs, b, b_rs, cols, K, c, ldc, accumulate);
    case 5:
      return tile<5>(a, a_rs, a_cs, b, b_rs, cols, K, c, ldc, accumulate);
    case 6:
      return tile<6>(a, a_rs, a_cs, b, b_rs, cols, K, c, ldc, accumulate);
    default:
      return tile<7>(a, a_rs, a_cs, b, b_rs, cols, K, c, ldc, accumulate);
  }
}

[[gnu::target("avx512f")]] void tiny_gemm_avx512(int64_t batch, int64_t M, int64_t N, int64_t K,
                                                 StridedMatrices a, StridedMatrices b, float* c,
                                                 bool accumulate) {
  const __mmask16 cols = static_cast<__mmask16>((1u << N) - 1);
  alignas(64) float rows_of_b[kMaxDepth * kMaxCols];  // b copied into rows, when it is not in rows
  for (int64_t i = 0; i < batch; ++i) {
    const float* ai = a.data + i * a.batch_stride;
    const float* bi = b.data + i * b.batch_stride;
    float* ci = c + i * M * N;
    int64_t b_rs = b.row_stride;
    if (b.col_stride != 1) {  // b transposed (attention's keys): copy its columns into rows
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t j = 0; j < N; ++j)
          rows_of_b[k * kMaxCols + j] = bi[k * b.row_stride + j * b.col_stride];
      }
      bi = rows_of_b;
      b_rs = kMaxCols;
    }
    int64_t r = 0;
    for (; r + kTileRows <= M; r += kTileRows) {
      tile<kTileRows>(ai + r * a.row_stride, a.row_stride, a.col_stride, bi, b_rs, cols, K,
                      ci + r * N, N, accumulate);
    }
    if (r < M) {
      tail_tile(M - r, ai + r * a.row_stride, a.row_stride, a.col_stride, bi, b_rs, cols, K,
                ci + r * N, N, accumulate);
    }
  }
}

bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

}  // namespace

bool tiny_gemm_fits(int64_t M, int64_t N, int64_t K) {
  return M > 1 && M <= kMaxRows && N >= 1 && N <= kMaxCols && K >= 1 && K <= kMaxDepth &&
         cpu_has_avx512f();
}

void tiny_gemm(int64_t batch, int64_t M, int64_t N, int64_t K, StridedMatrices a, StridedMatrices b,
               float* c, bool accumulate) {
  tiny_gemm_avx512(batch, M, N, K, a, b, c, accumulate);
}

#else  // no AVX-512 kernel in this build: OpenBLAS does every product

bool tiny_gemm_fits(int64_t, int64_t, int64_t) { return false; }

void tiny_gemm(int64_t, int64_t, int64_t, int64_t, StridedMatrices, StridedMatrices, float*, bool) {
  SG_FAIL("tiny_gemm: this build has no AVX-512 kernel (tiny_gemm_fits is always false)");
}

#endif

}  // namespace sg::cpu
