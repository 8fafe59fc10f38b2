// short_softmax (short_softmax.h). As in tiny_gemm.cpp, only the functions marked
// gnu::target use AVX-512 instructions, and short_softmax_fits checks the CPU first.
#include "autograd/backend/cpu/short_softmax.h"

#include "autograd/error.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define SG_SHORT_SOFTMAX_AVX512 1
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#endif

namespace sg::cpu {

#ifdef SG_SHORT_SOFTMAX_AVX512

// GCC 12 warns that the _mm512_undefined_ps() inside many AVX-512 intrinsics "may be used
// uninitialised" once they are inlined (GCC bug 105593, fixed in GCC 13): not a bug here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

constexpr int64_t kMaxRow = 16;

#define SG_AVX512 gnu::target("avx512f,avx512bw,avx512vl")

// fast_exp (vec_math.h) on 16 lanes: the same Cephes polynomial; 2^n applied by scalef.
[[SG_AVX512, gnu::always_inline]] inline __m512 exp16(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.3762626647949f), lo = _mm512_set1_ps(-87.3365447504f);
  // Lanes below lo (masked entries: -inf) compute exp(0) and become 0 at the end: clamped to lo
  // they would make denormal intermediates, which cost a microcode assist each (4x slower).
  const __mmask16 tiny = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  const __m512 clamped = _mm512_mask_mov_ps(_mm512_min_ps(x, hi), tiny, _mm512_setzero_ps());
  const __m512 n = _mm512_roundscale_ps(
      _mm512_fmadd_ps(clamped, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
      _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), clamped);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 e = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  __m512 y = _mm512_scalef_ps(e, n);
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ),
                         _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  y = _mm512_mask_mov_ps(y, tiny, _mm512_setzero_ps());
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);  // NaN stays NaN
}

// The sum of 16 floats, in double.
[[SG_AVX512, gnu::always_inline]] inline double sum16(__m512 v) {
  const __m512d low = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
  const __m512d high = _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, 0x4E)));
  return _mm512_reduce_add_pd(_mm512_add_pd(low, high));
}

// Lanes [0, D) of the row whose mask bytes say "take part".
[[SG_AVX512, gnu::always_inline]] inline __mmask16 kept_lanes(const uint8_t* keep,
                                                              int64_t keep_stride, __mmask16 row) {
  if (keep_stride == 0) return *keep ? row : __mmask16{0};
  uint8_t bytes[kMaxRow];
  const uint8_t* from = keep;
  if (keep_stride != 1) {
    for (int d = 0; d < kMaxRow; ++d) bytes[d] = (row >> d) & 1 ? keep[d * keep_stride] : 0;
    from = bytes;
  }
  const __m128i mask_bytes = _mm_maskz_loadu_epi8(row, from);
  return _mm_mask_test_epi8_mask(row, mask_bytes, mask_bytes);
}

[[SG_AVX512]] void rows_avx512(const float* x, float* y, int64_t rows, int64_t D,
                               const uint8_t* keep, int64_t keep_row_stride, int64_t keep_stride) {
  const __mmask16 row = static_cast<__mmask16>((1u << D) - 1);
  const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r) {
    const __mmask16 kept =
        keep == nullptr ? row : kept_lanes(keep + r * keep_row_stride, keep_stride, row);
    // Masked entries (and the lanes past D) are -inf: they do not change the max, and their exp
    // is exactly 0. A masked x may be anything, even NaN: it is never read.
    const __m512 v = _mm512_mask_loadu_ps(minus_inf, kept, x + r * D);
    const float m = _mm512_reduce_max_ps(v);
    if (keep != nullptr && m == -std::numeric_limits<float>::infinity()) {
      _mm512_mask_storeu_ps(y + r * D, row, _mm512_setzero_ps());  // nothing to attend to
      continue;
    }
    // (Unmasked, a row of -inf gives -inf - -inf = NaN everywhere, as in PyTorch.)
    const __m512 e = _mm512_maskz_mov_ps(row, exp16(_mm512_sub_ps(v, _mm512_set1_ps(m))));
    const double total = sum16(e);
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / total));
    _mm512_mask_storeu_ps(y + r * D, row, _mm512_mul_ps(e, inv));
  }
}

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl");
  return has;
}

}  // namespace

#pragma GCC diagnostic pop

bool short_softmax_fits(int64_t D) { return D >= 1 && D <= kMaxRow && cpu_has_avx512(); }

void short_softmax_rows(const float* x, float* y, int64_t rows, int64_t D, const uint8_t* keep,
                        int64_t keep_row_stride, int64_t keep_stride) {
  SG_CHECK(D >= 1 && D <= kMaxRow, "short_softmax: rows of {} elements, the kernel takes 1 to {}",
           D, kMaxRow);
  rows_avx512(x, y, rows, D, keep, keep_row_stride, keep_stride);
}

#else  // no AVX-512 kernel in this build: softmax.cpp's portable path does every row

bool short_softmax_fits(int64_t) { return false; }

void short_softmax_rows(const float*, float*, int64_t, int64_t, const uint8_t*, int64_t, int64_t) {
  SG_FAIL("short_softmax: this build has no AVX-512 kernel (short_softmax_fits is always false)");
}

#endif

}  // namespace sg::cpu
