// What the AVX-512 kernels over short rows share (short_softmax.cpp, short_layer_norm.cpp,
// short_attention.cpp): a row
// of D <= 64 floats is 1 to 4 registers of 16 lanes, the lanes past D masked off, and sums are
// taken in double (8 lanes per register). Only functions marked SG_AVX512 contain these
// instructions; callers check cpu_has_avx512() first, so the rest of the build stays portable.
// Include only where SG_AVX512_ROWS is defined (x86-64 with GCC or Clang).
#pragma once

// GCC 12 warns that the _mm512_undefined_ps() inside many AVX-512 intrinsics "may be used
// uninitialised" once they are inlined (GCC bug 105593, fixed in GCC 13): not a bug here. The
// code between these two is spared the warning; Clang has neither the bug nor the warning.
#if defined(__GNUC__) && !defined(__clang__)
#define SG_BEGIN_GCC_BUG_105593                                                              \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define SG_END_GCC_BUG_105593 _Pragma("GCC diagnostic pop")
#else
#define SG_BEGIN_GCC_BUG_105593
#define SG_END_GCC_BUG_105593
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define SG_AVX512_ROWS 1
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "autograd/cpu_features.h"

// For the functions that use AVX-512 (the byte and 128/256-bit forms too, for masks and halves).
#define SG_AVX512 gnu::target("avx512f,avx512bw,avx512vl")

namespace sg::cpu::avx512 {

// Whether the SG_AVX512 functions may run: this CPU has AVX-512 and the cap allows it
// (cpu_features.h: SCRATCHGRAD_CPU_FEATURES=avx2 sends every kernel down its portable path).
inline bool cpu_has_avx512() { return cpu_features() >= CpuFeatures::Avx512; }

// The lanes of each of a row's V registers that hold one of its D elements.
template <int V>
struct RowLanes {
  __mmask16 lanes[V];
  explicit RowLanes(int64_t D) {
    for (int v = 0; v < V; ++v) {
      const int64_t n = std::clamp<int64_t>(D - 16 * v, 0, 16);
      lanes[v] = static_cast<__mmask16>((1u << n) - 1);
    }
  }
};

// f.template operator()<V>() with V the registers a row of D (1..64) floats takes: the kernels'
// row loops are templates on V, chosen here once per call.
template <typename F>
decltype(auto) with_registers_per_row(int64_t D, F&& f) {
  switch ((D + 15) / 16) {
    case 1:
      return f.template operator()<1>();
    case 2:
      return f.template operator()<2>();
    case 3:
      return f.template operator()<3>();
    default:
      return f.template operator()<4>();
  }
}

// acc + the 16 floats of v, in double (8 lanes).
[[SG_AVX512, gnu::always_inline]] inline __m512d add16(__m512 v, __m512d acc) {
  acc = _mm512_add_pd(acc, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
  return _mm512_add_pd(acc,
                       _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, 0x4E))));
}

// acc + sum over d of a[d] * b[d] for 16 floats each, multiplied and summed in double.
[[SG_AVX512, gnu::always_inline]] inline __m512d dot16(__m512 a, __m512 b, __m512d acc) {
  const __m512 a_high = _mm512_shuffle_f32x4(a, a, 0x4E), b_high = _mm512_shuffle_f32x4(b, b, 0x4E);
  acc = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(a)),
                        _mm512_cvtps_pd(_mm512_castps512_ps256(b)), acc);
  return _mm512_fmadd_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(a_high)),
                         _mm512_cvtps_pd(_mm512_castps512_ps256(b_high)), acc);
}

// fast_exp (vec_math.h) on 16 lanes: the same Cephes polynomial; 2^n applied by scalef.
[[SG_AVX512, gnu::always_inline]] inline __m512 exp16(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.3762626647949f), lo = _mm512_set1_ps(-87.3365447504f);
  // Lanes below lo (masked entries: -inf) compute exp(0) and become 0 at the end: clamped to lo
  // they would make denormal intermediates, which cost a microcode assist each (several times
  // slower).
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

// GCC 12's unpack and shift intrinsics start from an "undefined" register that it then reports as
// used uninitialised when this is compiled without inlining (-O1; GCC bug 105593, fixed in GCC 13).
SG_BEGIN_GCC_BUG_105593
// 16 floats rounded to bfloat16 and kept as floats: float_to_bfloat16_bits (autograd/bfloat16.cpp)
// lane by lane, the same bits (denormals kept; a NaN becomes 0x7FC0's), for autocast's products.
[[SG_AVX512, gnu::always_inline]] inline __m512 round_to_bfloat16(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i lowest_kept_bit =
      _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i carried =
      _mm512_add_epi32(bits, _mm512_add_epi32(lowest_kept_bit, _mm512_set1_epi32(0x7FFF)));
  const __m512 rounded = _mm512_castsi512_ps(
      _mm512_and_si512(carried, _mm512_set1_epi32(static_cast<int>(0xFFFF0000))));
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_mov_ps(rounded, nan, _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000)));
}

// out[i] = x[i] rounded to bfloat16, kept as floats, for i < n (out may be x).
[[SG_AVX512]] inline void round_floats_to_bfloat16(const float* x, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(out + i, lanes, round_to_bfloat16(_mm512_maskz_loadu_ps(lanes, x + i)));
  }
}

// x[i] becomes column i of the 16 x 16 block whose rows x held: three rounds of interleaving,
// each pairing registers 1, 2, then 4 and 8 apart (unpack floats, unpack pairs, swap 128-bit
// quarters twice).
[[SG_AVX512]] inline void transpose_16x16(__m512 x[16]) {
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
SG_END_GCC_BUG_105593

}  // namespace sg::cpu::avx512

#endif
