// short_softmax (short_softmax.h). As in tiny_gemm.cpp, only the functions marked
// gnu::target use AVX-512 instructions, and short_softmax_fits checks the CPU first.
#include "autograd/backend/cpu_fast/short_softmax.h"

#include "autograd/backend/cpu_fast/avx512_rows.h"
#include "autograd/error.h"

#ifdef SG_AVX512_ROWS
#include <cmath>
#include <limits>
#endif

namespace sg::cpu {

#ifdef SG_AVX512_ROWS

// GCC 12 warns that the _mm512_undefined_ps() inside many AVX-512 intrinsics "may be used
// uninitialised" once they are inlined (GCC bug 105593, fixed in GCC 13): not a bug here.
SG_BEGIN_GCC_BUG_105593

namespace {

using avx512::add16;
using avx512::cpu_has_avx512;
using avx512::dot16;
using avx512::exp16;
using avx512::RowLanes;
using avx512::with_registers_per_row;

constexpr int64_t kMaxRow = 64;  // 4 registers of 16 floats

// Of register v's lanes, those whose mask byte says "take part".
[[SG_AVX512, gnu::always_inline]] inline __mmask16 kept_lanes(const uint8_t* keep,
                                                              int64_t keep_stride,
                                                              __mmask16 lanes) {
  if (keep_stride == 0) return *keep ? lanes : __mmask16{0};
  uint8_t bytes[16];
  const uint8_t* from = keep;
  if (keep_stride != 1) {
    for (int d = 0; d < 16; ++d) bytes[d] = (lanes >> d) & 1 ? keep[d * keep_stride] : 0;
    from = bytes;
  }
  const __m128i mask_bytes = _mm_maskz_loadu_epi8(lanes, from);
  return _mm_mask_test_epi8_mask(lanes, mask_bytes, mask_bytes);
}

// Forward of R rows from row r, each D <= 16 V floats. The R rows go through each step together:
// a row alone is one long chain of dependent instructions (max, exp, sum, division), which the
// CPU could overlap with the next row's only a few rows deep; written side by side, it sees them.
// With kLog, y = log_softmax(x) = (x - max) - log(sum) instead (no mask).
template <int V, int R, bool kLog = false>
[[SG_AVX512, gnu::always_inline]] inline void row_group(const float* x, float* y, int64_t r,
                                                        int64_t D, const RowLanes<V>& row,
                                                        const uint8_t* keep,
                                                        int64_t keep_row_stride,
                                                        int64_t keep_stride) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  const __m512 minus_inf = _mm512_set1_ps(kMinusInf);
  // Masked entries (and the lanes past D) are -inf: they do not change the max, and their exp is
  // exactly 0. A masked x may be anything, even NaN: it is never read.
  __m512 v[R][V];
  float m[R];
  for (int j = 0; j < R; ++j) {
    __m512 largest = minus_inf;
    for (int i = 0; i < V; ++i) {
      const __mmask16 kept =
          keep == nullptr ? row.lanes[i]
                          : kept_lanes(keep + (r + j) * keep_row_stride + 16 * i * keep_stride,
                                       keep_stride, row.lanes[i]);
      v[j][i] = _mm512_mask_loadu_ps(minus_inf, kept, x + (r + j) * D + 16 * i);
      largest = _mm512_max_ps(largest, v[j][i]);
    }
    m[j] = _mm512_reduce_max_ps(largest);
  }
  // (Unmasked, a row of -inf gives -inf - -inf = NaN everywhere, as in PyTorch.)
  __m512d total[R];
  for (int j = 0; j < R; ++j) {
    total[j] = _mm512_setzero_pd();
    for (int i = 0; i < V; ++i) {
      const __m512 shifted = _mm512_sub_ps(v[j][i], _mm512_set1_ps(m[j]));
      const __m512 e = _mm512_maskz_mov_ps(row.lanes[i], exp16(shifted));
      v[j][i] = kLog ? shifted : e;  // (x - m first: m + log(sum) would round away the log)
      total[j] = add16(e, total[j]);
    }
  }
  if constexpr (kLog) {
    for (int j = 0; j < R; ++j) {
      const __m512 log_total =
          _mm512_set1_ps(static_cast<float>(std::log(_mm512_reduce_add_pd(total[j]))));
      for (int i = 0; i < V; ++i) {
        _mm512_mask_storeu_ps(y + (r + j) * D + 16 * i, row.lanes[i],
                              _mm512_sub_ps(v[j][i], log_total));
      }
    }
    return;
  }
  for (int j = 0; j < R; ++j) {
    // A masked row with nothing kept (its max is -inf) attends to nothing: zeros.
    const bool nothing_kept = keep != nullptr && m[j] == kMinusInf;
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / _mm512_reduce_add_pd(total[j])));
    for (int i = 0; i < V; ++i) {
      const __m512 out = nothing_kept ? _mm512_setzero_ps() : _mm512_mul_ps(v[j][i], inv);
      _mm512_mask_storeu_ps(y + (r + j) * D + 16 * i, row.lanes[i], out);
    }
  }
}

// Forward, rows of D <= 16 V floats: four rows at a time (two for rows of 3-4 registers, whose
// registers would not fit four times), then one by one.
template <int V, bool kLog = false>
[[SG_AVX512]] void rows_avx512(const float* x, float* y, int64_t rows, int64_t D,
                               const uint8_t* keep, int64_t keep_row_stride, int64_t keep_stride) {
  const RowLanes<V> row(D);
  constexpr int kGroup = V == 1 ? 8 : (V <= 2 ? 4 : 2);
  int64_t r = 0;
  for (; r + kGroup <= rows; r += kGroup) {
    row_group<V, kGroup, kLog>(x, y, r, D, row, keep, keep_row_stride, keep_stride);
  }
  for (; r < rows; ++r) {
    row_group<V, 1, kLog>(x, y, r, D, row, keep, keep_row_stride, keep_stride);
  }
}

// Backward, dx = y * (g - sum(g * y)), rows of D <= 16 V floats.
template <int V>
[[SG_AVX512]] void backward_rows_avx512(const float* g, const float* y, float* dx, int64_t rows,
                                        int64_t D) {
  const RowLanes<V> row(D);
  for (int64_t r = 0; r < rows; ++r) {
    __m512 gv[V], yv[V];
    __m512d dot = _mm512_setzero_pd();
    for (int i = 0; i < V; ++i) {
      gv[i] = _mm512_maskz_loadu_ps(row.lanes[i], g + r * D + 16 * i);
      yv[i] = _mm512_maskz_loadu_ps(row.lanes[i], y + r * D + 16 * i);
      dot = dot16(gv[i], yv[i], dot);
    }
    const __m512 s = _mm512_set1_ps(static_cast<float>(_mm512_reduce_add_pd(dot)));
    for (int i = 0; i < V; ++i) {
      _mm512_mask_storeu_ps(dx + r * D + 16 * i, row.lanes[i],
                            _mm512_mul_ps(yv[i], _mm512_sub_ps(gv[i], s)));
    }
  }
}

}  // namespace

SG_END_GCC_BUG_105593

bool short_softmax_fits(int64_t D) { return D >= 1 && D <= kMaxRow && cpu_has_avx512(); }

void short_softmax_rows(const float* x, float* y, int64_t rows, int64_t D, const uint8_t* keep,
                        int64_t keep_row_stride, int64_t keep_stride) {
  SG_CHECK(D >= 1 && D <= kMaxRow, "short_softmax: rows of {} elements, the kernel takes 1 to {}",
           D, kMaxRow);
  with_registers_per_row(
      D, [&]<int V>() { rows_avx512<V>(x, y, rows, D, keep, keep_row_stride, keep_stride); });
}

void short_log_softmax_rows(const float* x, float* y, int64_t rows, int64_t D) {
  SG_CHECK(D >= 1 && D <= kMaxRow, "short_softmax: rows of {} elements, the kernel takes 1 to {}",
           D, kMaxRow);
  with_registers_per_row(
      D, [&]<int V>() { rows_avx512<V, /*kLog=*/true>(x, y, rows, D, nullptr, 0, 0); });
}

void short_softmax_backward_rows(const float* g, const float* y, float* dx, int64_t rows,
                                 int64_t D) {
  SG_CHECK(D >= 1 && D <= kMaxRow, "short_softmax: rows of {} elements, the kernel takes 1 to {}",
           D, kMaxRow);
  with_registers_per_row(D, [&]<int V>() { backward_rows_avx512<V>(g, y, dx, rows, D); });
}

#else  // no AVX-512 kernel in this build: softmax.cpp's portable path does every row

bool short_softmax_fits(int64_t) { return false; }

void short_softmax_rows(const float*, float*, int64_t, int64_t, const uint8_t*, int64_t, int64_t) {
  SG_FAIL("short_softmax: this build has no AVX-512 kernel (short_softmax_fits is always false)");
}

void short_log_softmax_rows(const float*, float*, int64_t, int64_t) {
  SG_FAIL("short_softmax: this build has no AVX-512 kernel (short_softmax_fits is always false)");
}

void short_softmax_backward_rows(const float*, const float*, float*, int64_t, int64_t) {
  SG_FAIL("short_softmax: this build has no AVX-512 kernel (short_softmax_fits is always false)");
}

#endif

}  // namespace sg::cpu
