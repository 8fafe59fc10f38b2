// The inside of bf16_gemm (bf16_gemm.h): packing float32 operands into bfloat16 pairs, and the
// register tile of vdpbf16ps. Only functions marked SG_AVX512_BF16 contain these instructions;
// bf16_gemm_fits checks the CPU first. Include only where SG_BF16_TILE is defined (x86-64 with GCC
// or Clang).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define SG_BF16_TILE 1
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "autograd/backend/cpu_fast/avx512_rows.h"
#include "autograd/bfloat16.h"

#define SG_AVX512_BF16 gnu::target("avx512f,avx512bw,avx512vl,avx512bf16")

namespace sg::cpu::bf16 {

// A pair of bfloat16 values in one 32-bit word, k even in the low half (the lane order vdpbf16ps
// multiplies in).
using Pair = uint32_t;

// The first n of 16 lanes.
[[SG_AVX512_BF16, gnu::always_inline]] inline __mmask16 first_lanes(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1);
}

// out[i] = (row0[i], row1[i]) for i < n, zeros for n <= i < width (width <= 16): two rows of k
// (row1 null: past the end, a zero partner), contiguous across i. Nothing past out[width - 1] is
// written: the next pair, or the next panel, may be another thread's.
[[SG_AVX512_BF16, gnu::always_inline]] inline void interleave_rows(const float* row0,
                                                                   const float* row1, int64_t n,
                                                                   int64_t width, Pair* out) {
  const __mmask16 lanes = first_lanes(n);
  const __m512 k0 = _mm512_maskz_loadu_ps(lanes, row0);
  const __m512 k1 = row1 != nullptr ? _mm512_maskz_loadu_ps(lanes, row1) : _mm512_setzero_ps();
  // Elements 0-15 are row0's, 16-31 row1's; then each i takes element i and element 16 + i.
  const __m512i both = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(k1, k0));
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                         8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  _mm512_mask_storeu_epi32(out, first_lanes(width), _mm512_permutexvar_epi16(order, both));
}

// The 16 pairs (x[2q], x[2q + 1]) of x[0, 32), in k order, the values from x[n] on as zeros (n <=
// 0: nothing is read). Every packing of values contiguous along k converts them this way.
[[SG_AVX512_BF16, gnu::always_inline]] inline __m512i pairs_of_32(const float* x, int64_t n) {
  const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(n), x);
  const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(n - 16), x + 16);
  return reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
}

// The pairs of 16 lanes contiguous along k (lane i at x + i * is, lanes past `lanes` zero): each
// lane's 16 pairs of a chunk of k in a register, the 16 x 16 block of pairs transposed, and each
// pair's 16 lanes stored as one register at out[p * stride] (stride a multiple of 16: whole rows of
// a panel). A panel of b transposed (a Linear layer's weight) is packed this way.
[[SG_AVX512_BF16]] inline void sixteen_lanes_along(const float* x, int64_t is, int64_t lanes,
                                                   int64_t K, Pair* out, int64_t stride) {
  const int64_t pairs = (K + 1) / 2;
  for (int64_t k = 0; k < K; k += 32) {
    __m512 block[16];
    for (int64_t i = 0; i < 16; ++i) {
      const float* lane = x + (i < lanes ? i * is : 0) + k;  // a lane past `lanes` reads nothing
      block[i] = reinterpret_cast<__m512>(pairs_of_32(lane, i < lanes ? K - k : 0));
    }
    avx512::transpose_16x16(block);  // block[q]: pair k/2 + q of each lane (32-bit moves)
    for (int64_t q = 0; q < 16 && k / 2 + q < pairs; ++q) {
      _mm512_store_ps(reinterpret_cast<float*>(out + (k / 2 + q) * stride), block[q]);
    }
  }
}

// `count` <= 48 / L consecutive panels of L rows of a whose rows are contiguous for each k (a
// transposed: a Linear layer's output gradient in its weight gradient, gᵀ·x), packed as pack_panel
// packs each (panel q at out + q * pairs * L). Packed a panel at a time, each pair of k would be
// read 6 floats at a time from rows a kilobyte or more apart; here each pair of k fills three
// whole registers of 48 lanes, and each panel's L lanes are permuted out of them.
template <int64_t L>
[[SG_AVX512_BF16]] void pack_transposed_panels(const float* x, int64_t ks, int64_t lanes, int64_t K,
                                               int64_t count, Pair* out) {
  static_assert(48 % L == 0 && L <= 16, "panels of L rows tile 48 lanes");
  const int64_t pairs = (K + 1) / 2, used = std::min<int64_t>(48, count * L);
  // Panel q's lanes start at lane q * L of the 48: register (q * L) / 16, from lane (q * L) % 16
  // of it and on into the next.
  __m512i from[48 / L];
  for (int64_t q = 0; q < 48 / L; ++q) {
    alignas(64) int32_t index[16];
    for (int i = 0; i < 16; ++i) index[i] = static_cast<int32_t>((q * L) % 16 + i);
    from[q] = _mm512_load_si512(index);
  }
  for (int64_t p = 0; p < pairs; ++p) {
    const float* row0 = x + 2 * p * ks;
    const float* row1 = 2 * p + 1 < K ? row0 + ks : nullptr;
    alignas(64) Pair both[48];
    for (int64_t v = 0; v < used; v += 16) {
      interleave_rows(row0 + v, row1 != nullptr ? row1 + v : nullptr, lanes - v, 16, both + v);
    }
    __m512i r[3];
    for (int64_t v = 0; v < 48; v += 16) {  // registers past `used` hold no panel's lanes
      r[v / 16] = v < used ? _mm512_load_si512(both + v) : _mm512_setzero_si512();
    }
    for (int64_t q = 0; q < count; ++q) {
      const int64_t g = (q * L) / 16;
      const __m512i lanes_of_q =
          _mm512_permutex2var_epi32(r[g], from[q], r[std::min<int64_t>(g + 1, 2)]);
      _mm512_mask_storeu_epi32(out + q * pairs * L + p * L, first_lanes(L), lanes_of_q);
    }
  }
}

// The pair (x[k0], x[k1]) of two strided elements, rounded in software (neither operand has a
// unit stride: rare); k1 < 0 for a zero partner.
inline Pair pair_of(const float* x, int64_t k0, int64_t k1) {
  const Pair low = float_to_bfloat16_bits(x[k0]);
  return k1 < 0 ? low : low | static_cast<Pair>(float_to_bfloat16_bits(x[k1])) << 16;
}

// L rows of a, each contiguous along k, as rows of pairs: out[i * pairs + p] for pair p of row i,
// rows past `lanes` zero. The tile reads a's pairs straight from these rows: a plain conversion,
// 32 values a step, where a panel (below) would scatter each pair to its own place (on a CPU with
// two vdpbf16ps a cycle that scattering took a sixth of a training step).
template <int64_t L>
[[SG_AVX512_BF16]] void pack_rows(const float* x, int64_t is, int64_t lanes, int64_t K, Pair* out) {
  const int64_t pairs = (K + 1) / 2;
  for (int64_t i = 0; i < L; ++i) {
    const float* row = x + i * is;
    for (int64_t k = 0; k < K; k += 32) {
      // 16 consecutive pairs (an odd K's last one with a zero partner); a row past `lanes` is
      // zeros, read from nowhere.
      _mm512_mask_storeu_epi32(out + i * pairs + k / 2, first_lanes(pairs - k / 2),
                               pairs_of_32(row + k, i < lanes ? K - k : 0));
    }
  }
}

// A panel of `lanes` <= L columns of b (L: the tile's columns) or rows of a (its rows), as pairs:
// out[p * L + i] for pair p of lane i, lanes past `lanes` zero. Element (i, k) of the source is at
// x[i * is + k * ks]. a comes here only when neither of its strides is 1 (pack_rows and
// pack_transposed_panels take the others).
template <int64_t L>
[[SG_AVX512_BF16]] void pack_panel(const float* x, int64_t is, int64_t ks, int64_t lanes, int64_t K,
                                   Pair* out) {
  const int64_t pairs = (K + 1) / 2;
  if (ks == 1 && L % 16 == 0) {  // each lane contiguous along k, 16 lanes at a time
    for (int64_t i = 0; i < L; i += 16) {
      sixteen_lanes_along(x + i * is, is, lanes - i, K, out + i, L);
    }
  } else if (is == 1) {  // the lanes contiguous for each k: a pair of k at a time
    for (int64_t p = 0; p < pairs; ++p) {
      const float* row0 = x + 2 * p * ks;
      const float* row1 = 2 * p + 1 < K ? row0 + ks : nullptr;
      for (int64_t v = 0; v < L; v += 16) {
        interleave_rows(row0 + v, row1 != nullptr ? row1 + v : nullptr, lanes - v,
                        std::min<int64_t>(16, L - v), out + p * L + v);
      }
    }
  } else {
    for (int64_t p = 0; p < pairs; ++p) {
      for (int64_t i = 0; i < L; ++i) {
        out[p * L + i] =
            i < lanes ? pair_of(x + i * is, 2 * p * ks, 2 * p + 1 < K ? (2 * p + 1) * ks : -1) : 0;
      }
    }
  }
}

// c[r, j] (+)= Σ_p a-pair(r, p) · b-pair(p, j) over `pairs` pairs, for the tile's rows r < rows and
// columns j < cols; b is a panel as pack_panel writes it, from the tile's first pair, and a-pair(r,
// p) is a[r * a_row + p * kAStep]: a panel (kAStep = R, a_row = 1) or rows of pairs (kAStep = 1,
// a_row = the pairs of a row; pack_rows). c's old values are read when `load_c` (accumulating, or
// a later block of the depth).
template <int64_t R, int64_t V, int64_t kAStep>
[[SG_AVX512_BF16]] void tile(int64_t pairs, const Pair* a, int64_t a_row, const Pair* b, float* c,
                             int64_t ldc, int64_t rows, int64_t cols, bool load_c) {
  __m512 sum[R][V];
  __mmask16 lanes[V];
  for (int64_t v = 0; v < V; ++v) lanes[v] = first_lanes(cols - 16 * v);
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t v = 0; v < V; ++v) {
      sum[r][v] = load_c && r < rows ? _mm512_maskz_loadu_ps(lanes[v], c + r * ldc + 16 * v)
                                     : _mm512_setzero_ps();
    }
  }
  for (int64_t p = 0; p < pairs; ++p) {
    __m512bh b_pairs[V];
    for (int64_t v = 0; v < V; ++v) {
      b_pairs[v] = reinterpret_cast<__m512bh>(_mm512_load_si512(b + p * 16 * V + 16 * v));
    }
    for (int64_t r = 0; r < R; ++r) {
      const __m512bh a_pair = reinterpret_cast<__m512bh>(
          _mm512_set1_epi32(static_cast<int>(a[r * a_row + p * kAStep])));
      for (int64_t v = 0; v < V; ++v) sum[r][v] = _mm512_dpbf16_ps(sum[r][v], a_pair, b_pairs[v]);
    }
  }
  for (int64_t r = 0; r < R && r < rows; ++r) {
    for (int64_t v = 0; v < V; ++v)
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, lanes[v], sum[r][v]);
  }
}

}  // namespace sg::cpu::bf16

#endif
