// tiny_gemm (tiny_gemm.h): the kernel functions carry gnu::target("avx512f"), so this file is
// compiled like every other kernel and only they use AVX-512 instructions; tiny_gemm_fits checks
// the CPU before anything calls them.
#include "autograd/backend/cpu_fast/tiny_gemm.h"

#include <array>
#include <utility>

#if defined(__x86_64__) && defined(__GNUC__)
#define SG_TINY_GEMM_AVX512 1
#include <immintrin.h>
#endif

#include "autograd/cpu_features.h"
#include "autograd/error.h"

namespace sg::cpu {

#ifdef SG_TINY_GEMM_AVX512

namespace {

constexpr int64_t kMaxRows = 16;  // M, N, K: a row of b or c is one 16-float register
constexpr int64_t kMaxCols = 16;
constexpr int64_t kMaxDepth = 16;

// c (+)= a·b for one product of R rows, b given as K rows of 16 floats (row stride b_rs) of which
// the mask's lanes are real. All R rows of c stay in registers (R <= 16 of the 32) while k runs.
template <int R>
[[gnu::target("avx512f"), gnu::always_inline]] inline void product(const float* a, int64_t a_rs,
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

// The batch, M = R rows each: the row count is a template argument, chosen once per batch.
template <int R>
[[gnu::target("avx512f")]] void products(int64_t batch, int64_t N, int64_t K, StridedMatrices a,
                                         StridedMatrices b, float* c, bool accumulate) {
  const __mmask16 cols = static_cast<__mmask16>((1u << N) - 1);
  alignas(64) float rows_of_b[kMaxDepth * kMaxCols];  // b copied into rows, when it is not in rows
  for (int64_t i = 0; i < batch; ++i) {
    const float* bi = b.data + i * b.batch_stride;
    int64_t b_rs = b.row_stride;
    if (b.col_stride != 1) {  // b transposed (attention's keys): copy its columns into rows
      const bool copied = i > 0 && b.batch_stride == 0;  // one b for the batch: copied already
      for (int64_t k = 0; k < K && !copied; ++k) {
        for (int64_t j = 0; j < N; ++j) {
          rows_of_b[k * kMaxCols + j] = bi[k * b.row_stride + j * b.col_stride];
        }
      }
      bi = rows_of_b;
      b_rs = kMaxCols;
    }
    product<R>(a.data + i * a.batch_stride, a.row_stride, a.col_stride, bi, b_rs, cols, K,
               c + i * R * N, N, accumulate);
  }
}

// products<1> ... products<kMaxRows>, indexed by M - 1.
using Products = void (*)(int64_t, int64_t, int64_t, StridedMatrices, StridedMatrices, float*,
                          bool);
template <size_t... Index>
constexpr std::array<Products, sizeof...(Index)> products_by_rows(std::index_sequence<Index...>) {
  return {products<static_cast<int>(Index) + 1>...};
}
constexpr auto kProducts = products_by_rows(std::make_index_sequence<kMaxRows>{});

}  // namespace

bool tiny_gemm_fits(int64_t M, int64_t N, int64_t K) {
  return M > 1 && M <= kMaxRows && N >= 1 && N <= kMaxCols && K >= 1 && K <= kMaxDepth &&
         cpu_features() >= CpuFeatures::Avx512;
}

void tiny_gemm(int64_t batch, int64_t M, int64_t N, int64_t K, StridedMatrices a, StridedMatrices b,
               float* c, bool accumulate) {
  SG_CHECK(M >= 1 && M <= kMaxRows, "tiny_gemm: {} rows, the kernel takes 1 to {}", M, kMaxRows);
  kProducts[static_cast<size_t>(M - 1)](batch, N, K, a, b, c, accumulate);
}

#else  // no AVX-512 kernel in this build: OpenBLAS does every product

bool tiny_gemm_fits(int64_t, int64_t, int64_t) { return false; }

void tiny_gemm(int64_t, int64_t, int64_t, int64_t, StridedMatrices, StridedMatrices, float*, bool) {
  SG_FAIL("tiny_gemm: this build has no AVX-512 kernel (tiny_gemm_fits is always false)");
}

#endif

}  // namespace sg::cpu
