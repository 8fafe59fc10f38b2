// transpose_into_rows (transpose.h): 16 x 16 blocks transposed in registers where the CPU has
// AVX-512, one element at a time elsewhere.
#include "autograd/backend/cpu_fast/transpose.h"

#include <algorithm>

#include "autograd/backend/cpu_fast/avx512_rows.h"

namespace sg::cpu {

namespace {

void transpose_by_elements(const float* src, int64_t src_row, int64_t rows, int64_t cols,
                           float scale, float* dst, int64_t dst_row) {
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < rows; ++r) dst[c * dst_row + r] = scale * src[r * src_row + c];
  }
}

#ifdef SG_AVX512_ROWS

SG_BEGIN_GCC_BUG_105593

__mmask16 first_lanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

[[SG_AVX512]] void transpose_by_blocks(const float* src, int64_t src_row, int64_t rows,
                                       int64_t cols, float scale, float* dst, int64_t dst_row) {
  const __m512 factor = _mm512_set1_ps(scale);
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t block_rows = std::min<int64_t>(16, rows - r0);
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
      const int64_t block_cols = std::min<int64_t>(16, cols - c0);
      const __mmask16 in_row = first_lanes(block_cols), in_column = first_lanes(block_rows);
      __m512 x[16];
      for (int64_t i = 0; i < 16; ++i) {  // rows past the matrix are zeros, never stored
        x[i] = i < block_rows ? _mm512_maskz_loadu_ps(in_row, src + (r0 + i) * src_row + c0)
                              : _mm512_setzero_ps();
      }
      avx512::transpose_16x16(x);
      for (int64_t i = 0; i < block_cols; ++i) {
        _mm512_mask_storeu_ps(dst + (c0 + i) * dst_row + r0, in_column,
                              _mm512_mul_ps(x[i], factor));
      }
    }
  }
}

SG_END_GCC_BUG_105593

#endif

}  // namespace

void transpose_into_rows(const float* src, int64_t src_row, int64_t rows, int64_t cols, float scale,
                         float* dst, int64_t dst_row) {
#ifdef SG_AVX512_ROWS
  if (avx512::cpu_has_avx512()) {
    return transpose_by_blocks(src, src_row, rows, cols, scale, dst, dst_row);
  }
#endif
  transpose_by_elements(src, src_row, rows, cols, scale, dst, dst_row);
}

}  // namespace sg::cpu
