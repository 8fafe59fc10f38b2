// short_layer_norm (short_layer_norm.h), the AVX-512 helpers from avx512_rows.h.
#include "autograd/backend/cpu_fast/short_layer_norm.h"

#include "autograd/backend/cpu_fast/avx512_rows.h"
#include "autograd/error.h"

#ifdef SG_AVX512_ROWS
#include <cmath>
#endif

namespace sg::cpu {

#ifdef SG_AVX512_ROWS

// GCC 12's false "may be used uninitialised" in inlined AVX-512 intrinsics (short_softmax.cpp).
SG_BEGIN_GCC_BUG_105593

namespace {

using avx512::add16;
using avx512::cpu_has_avx512;
using avx512::RowLanes;
using avx512::with_registers_per_row;

constexpr int64_t kMaxRow = 64;  // 4 registers of 16 floats

// Per-column sums in double: the 16 floats of v added to two registers of 8 doubles (low, high).
struct ColumnSums {
  __m512d low, high;
  [[SG_AVX512, gnu::always_inline]] void add(__m512 v) {
    low = _mm512_add_pd(low, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    const __m256 upper = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    high = _mm512_add_pd(high, _mm512_cvtps_pd(upper));
  }
};

// out[d] += the registers' sum for column d, d < D.
template <int V>
[[SG_AVX512]] void add_columns(const ColumnSums* sums, int64_t D, double* out) {
  alignas(64) double lanes[16 * V];
  for (int i = 0; i < V; ++i) {
    _mm512_store_pd(lanes + 16 * i, sums[i].low);
    _mm512_store_pd(lanes + 16 * i + 8, sums[i].high);
  }
  for (int64_t d = 0; d < D; ++d) out[d] += lanes[d];
}

// Forward of R rows from row r, side by side (as short_softmax.cpp's row_group: one row is a
// long chain of dependent steps, sums, square root, division, that the CPU overlaps with the next
// rows' only when they are written together).
template <int V, int R>
[[SG_AVX512, gnu::always_inline]] inline void forward_group(const float* x, const __m512* wv,
                                                            const __m512* bv, double eps, float* y,
                                                            float* mean, float* rstd, int64_t r,
                                                            int64_t D, const RowLanes<V>& row) {
  const double inv_d = 1.0 / static_cast<double>(D);
  __m512 v[R][V];
  float m[R], s[R];
  for (int j = 0; j < R; ++j) {
    __m512d sum = _mm512_setzero_pd();
    for (int i = 0; i < V; ++i) {
      v[j][i] = _mm512_maskz_loadu_ps(row.lanes[i], x + (r + j) * D + 16 * i);  // 0 past D
      sum = add16(v[j][i], sum);
    }
    m[j] = static_cast<float>(_mm512_reduce_add_pd(sum) * inv_d);
  }
  // The variance from the centred values (two passes: no cancellation); past D they stay 0.
  for (int j = 0; j < R; ++j) {
    __m512d squares = _mm512_setzero_pd();
    for (int i = 0; i < V; ++i) {
      v[j][i] = _mm512_maskz_sub_ps(row.lanes[i], v[j][i], _mm512_set1_ps(m[j]));
      squares = add16(_mm512_mul_ps(v[j][i], v[j][i]), squares);
    }
    s[j] = static_cast<float>(1.0 / std::sqrt(_mm512_reduce_add_pd(squares) * inv_d + eps));
  }
  for (int j = 0; j < R; ++j) {
    mean[r + j] = m[j];
    rstd[r + j] = s[j];
    for (int i = 0; i < V; ++i) {
      const __m512 normalised = _mm512_mul_ps(v[j][i], _mm512_set1_ps(s[j]));
      _mm512_mask_storeu_ps(y + (r + j) * D + 16 * i, row.lanes[i],
                            _mm512_fmadd_ps(normalised, wv[i], bv[i]));
    }
  }
}

template <int V>
[[SG_AVX512]] void forward_avx512(const float* x, const float* w, const float* b, double eps,
                                  float* y, float* mean, float* rstd, int64_t rows, int64_t D) {
  const RowLanes<V> row(D);
  __m512 wv[V], bv[V];  // the affine weight and bias, loaded once (1 and 0 when absent)
  for (int i = 0; i < V; ++i) {
    wv[i] = w != nullptr ? _mm512_maskz_loadu_ps(row.lanes[i], w + 16 * i) : _mm512_set1_ps(1.0f);
    bv[i] = b != nullptr ? _mm512_maskz_loadu_ps(row.lanes[i], b + 16 * i) : _mm512_setzero_ps();
  }
  constexpr int kGroup = V <= 2 ? 4 : 2;  // as many rows as the registers hold
  int64_t r = 0;
  for (; r + kGroup <= rows; r += kGroup) {
    forward_group<V, kGroup>(x, wv, bv, eps, y, mean, rstd, r, D, row);
  }
  for (; r < rows; ++r) forward_group<V, 1>(x, wv, bv, eps, y, mean, rstd, r, D, row);
}

template <int V>
[[SG_AVX512]] void backward_avx512(const float* g, const float* x, const float* mean,
                                   const float* rstd, const float* w, float* dx, int64_t rows,
                                   int64_t D, double* dw_sums, double* db_sums) {
  const RowLanes<V> row(D);
  const double inv_d = 1.0 / static_cast<double>(D);
  __m512 wv[V];
  ColumnSums dw[V], db[V];  // this call's share of dw and db, kept in registers over all rows
  for (int i = 0; i < V; ++i) {
    wv[i] = w != nullptr ? _mm512_maskz_loadu_ps(row.lanes[i], w + 16 * i) : _mm512_set1_ps(1.0f);
    dw[i] = db[i] = ColumnSums{_mm512_setzero_pd(), _mm512_setzero_pd()};
  }
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 m = _mm512_set1_ps(mean[r]), s = _mm512_set1_ps(rstd[r]);
    __m512 xhat[V], ghat[V];
    __m512d sum_g = _mm512_setzero_pd(), sum_gx = _mm512_setzero_pd();
    for (int i = 0; i < V; ++i) {
      const __m512 gv = _mm512_maskz_loadu_ps(row.lanes[i], g + r * D + 16 * i);
      const __m512 xv = _mm512_maskz_loadu_ps(row.lanes[i], x + r * D + 16 * i);
      xhat[i] = _mm512_mul_ps(_mm512_maskz_sub_ps(row.lanes[i], xv, m), s);  // 0 past D
      ghat[i] = _mm512_mul_ps(gv, wv[i]);
      if (dw_sums != nullptr) dw[i].add(_mm512_mul_ps(gv, xhat[i]));
      if (db_sums != nullptr) db[i].add(gv);
      sum_g = add16(ghat[i], sum_g);
      sum_gx = add16(_mm512_mul_ps(ghat[i], xhat[i]), sum_gx);
    }
    if (dx == nullptr) continue;
    const __m512 a = _mm512_set1_ps(static_cast<float>(_mm512_reduce_add_pd(sum_g) * inv_d));
    const __m512 c = _mm512_set1_ps(static_cast<float>(_mm512_reduce_add_pd(sum_gx) * inv_d));
    for (int i = 0; i < V; ++i) {  // dx = rstd * (ĝ - mean(ĝ) - x̂ * mean(ĝ x̂))
      const __m512 inner = _mm512_fnmadd_ps(xhat[i], c, _mm512_sub_ps(ghat[i], a));
      _mm512_mask_storeu_ps(dx + r * D + 16 * i, row.lanes[i], _mm512_mul_ps(s, inner));
    }
  }
  if (dw_sums != nullptr) add_columns<V>(dw, D, dw_sums);
  if (db_sums != nullptr) add_columns<V>(db, D, db_sums);
}

}  // namespace

SG_END_GCC_BUG_105593

bool short_layer_norm_fits(int64_t D) { return D >= 1 && D <= kMaxRow && cpu_has_avx512(); }

void short_layer_norm_rows(const float* x, const float* w, const float* b, double eps, float* y,
                           float* mean, float* rstd, int64_t rows, int64_t D) {
  SG_CHECK(D >= 1 && D <= kMaxRow,
           "short_layer_norm: rows of {} elements, the kernel takes 1 to {}", D, kMaxRow);
  with_registers_per_row(D,
                         [&]<int V>() { forward_avx512<V>(x, w, b, eps, y, mean, rstd, rows, D); });
}

void short_layer_norm_backward_rows(const float* g, const float* x, const float* mean,
                                    const float* rstd, const float* w, float* dx, int64_t rows,
                                    int64_t D, double* dw_sums, double* db_sums) {
  SG_CHECK(D >= 1 && D <= kMaxRow,
           "short_layer_norm: rows of {} elements, the kernel takes 1 to {}", D, kMaxRow);
  with_registers_per_row(
      D, [&]<int V>() { backward_avx512<V>(g, x, mean, rstd, w, dx, rows, D, dw_sums, db_sums); });
}

#else  // no AVX-512 kernel in this build: layer_norm.cpp's portable loops do every row

bool short_layer_norm_fits(int64_t) { return false; }

void short_layer_norm_rows(const float*, const float*, const float*, double, float*, float*, float*,
                           int64_t, int64_t) {
  SG_FAIL("short_layer_norm: this build has no AVX-512 kernel (short_layer_norm_fits is false)");
}

void short_layer_norm_backward_rows(const float*, const float*, const float*, const float*,
                                    const float*, float*, int64_t, int64_t, double*, double*) {
  SG_FAIL("short_layer_norm: this build has no AVX-512 kernel (short_layer_norm_fits is false)");
}

#endif

}  // namespace sg::cpu
