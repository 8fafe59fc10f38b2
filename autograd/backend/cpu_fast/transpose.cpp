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

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's bug 105593, as short_softmax

__mmask16 first_lanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

// x[i] becomes column i of the 16 x 16 block whose rows x held: three rounds of interleaving,
// each pairing registers 1, 2, then 4 and 8 apart (unpack floats, unpack pairs, swap 128-bit
// quarters twice).
[[SG_AVX512]] void transpose_16x16(__m512 x[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {  // t[i]: rows i, i+1 interleaved, columns 0-1 of each quarter
    t[i] = _mm512_unpacklo_ps(x[i], x[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(x[i], x[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // x[i + j]: column j of each quarter, rows i..i+3
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
    const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    x[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    x[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    x[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    x[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {  // quarters of columns j, j + 8 (and j + 4, j + 12), 8 rows
    t[j] = _mm512_shuffle_f32x4(x[j], x[4 + j], 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(x[j], x[4 + j], 0xdd);
    t[8 + j] = _mm512_shuffle_f32x4(x[8 + j], x[12 + j], 0x88);
    t[12 + j] = _mm512_shuffle_f32x4(x[8 + j], x[12 + j], 0xdd);
  }
  for (int j = 0; j < 4; ++j) {  // whole columns
    x[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    x[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    x[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
    x[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xdd);
  }
}

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
      transpose_16x16(x);
      for (int64_t i = 0; i < block_cols; ++i) {
        _mm512_mask_storeu_ps(dst + (c0 + i) * dst_row + r0, in_column,
                              _mm512_mul_ps(x[i], factor));
      }
    }
  }
}

#pragma GCC diagnostic pop

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
