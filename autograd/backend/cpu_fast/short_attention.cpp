// Attention over short sequences in AVX-512 registers (backend.h: attention, attention_backward),
// for T, S <= 16 queries and keys and head sizes Dh, Dv <= 16: the tiny model's attention
// ([80 x 4] heads of 10 x 10 scores, Dh = 8) is a few hundred instructions per head, and composed
// from ops it costs two batched products, a scale, a masked softmax, copies of k and v and of the
// merged heads, and twice that backward (bench/NOTES.md).
//
// One head at a time, in registers whose 16 lanes are the queries t: the scores' column for key s
// is sᵀ[s] = Σ_d k[s, d] · qᵀ[d] (qᵀ transposed in registers once), so the softmax over the keys
// is elementwise across S registers (a max, S exps, a sum: no horizontal reductions per row);
// P's columns go back into its rows through the same transpose. Products that want rows instead
// (out = P·v, dq = dS·k, dk = dSᵀ·q, dv = Pᵀ·dO) broadcast one number of P or dS at a time
// against a row of v, k, q or dO, which are contiguous along the head dim.
//   forward   P = masked_softmax(scale · q·kᵀ), out = P·v; P is written out (the weights)
//   backward  dP = dO·vᵀ, dS = scale · P ∘ (dP - rowsum(P ∘ dP)), dq = dS·k, dk = dSᵀ·q, dv = Pᵀ·dO
// A forward of at most 4 queries (decoding's one new position) turns it around, the lanes the
// keys: each query's softmax is then one register (a max and a sum across lanes), and its row
// of P is stored as it is; with one query, the lanes-are-queries layout would fill 1 lane of 16.
// A query whose keys are all masked gets P = 0 (masked_softmax's rule), so its out, dq are 0.
// Keys may come by columns (a decoding cache keeps them so, nn/kv_buffer.h): then each of those
// registers of keys is one vector load instead of a gather, and the backward reads a copy of the
// keys in rows (attention.cpp).
// Under autocast (kRound, from the kernels' `bfloat16`) every operand of a product is rounded to
// bfloat16 as it enters registers (q, k, v, dO, P, dS: avx512::round_to_bfloat16), the sums stay
// float32, and the weights written out are not rounded.
// Anything else (longer sequences, float64, no AVX-512, a head dim with stride != 1) returns
// false and scaled_dot_product_attention composes the ops.
#include <algorithm>
#include <cstdint>

#include "autograd/backend/cpu_fast/attention.h"
#include "autograd/backend/cpu_fast/attention_heads.h"
#include "autograd/backend/cpu_fast/avx512_rows.h"
#include "autograd/backend/cpu_fast/parallel.h"

namespace sg::cpu {

#ifdef SG_AVX512_ROWS

SG_BEGIN_GCC_BUG_105593

namespace {

constexpr int64_t kMaxLength = 16;  // T, S, Dh, Dv: one register of 16 lanes
constexpr int64_t kFewQueries = 4;  // up to it the forward puts keys in the lanes (measured)

using avx512::exp16;

__mmask16 first_lanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

// x, or x rounded to bfloat16 (a product's operand under autocast).
template <bool kRound>
[[SG_AVX512, gnu::always_inline]] inline __m512 operand(__m512 x) {
  if constexpr (kRound) return avx512::round_to_bfloat16(x);
  return x;
}

// Lane t of the result: the number at column `col` of row t of a [T, ...] matrix, rows `row` apart.
[[SG_AVX512]] inline __m512 column(const float* m, int64_t row, int64_t col, __mmask16 rows) {
  const __m512i index =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(static_cast<int>(row)));
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), rows, index, m + col, 4);
}

// x[c] = column c of a [rows, cols] matrix (rows `row` apart; rows, cols <= 16): lane r holds
// m[r, c]. Loaded by rows and transposed in registers: 16 vector loads and 64 shuffles, where a
// gather per column costs ~20 cycles each (bench/NOTES.md).
template <bool kRound = false>
[[SG_AVX512]] inline void columns_of(const float* m, int64_t row, int64_t rows, int64_t cols,
                                     __m512 x[kMaxLength]) {
  const __mmask16 in_row = first_lanes(cols);
  for (int64_t r = 0; r < kMaxLength; ++r) {
    x[r] = r < rows ? operand<kRound>(_mm512_maskz_loadu_ps(in_row, m + r * row))
                    : _mm512_setzero_ps();
  }
  avx512::transpose_16x16(x);
}

// dst[i] = Σ_j c(i, j) · src[j] for i < count, j < terms: c(i, j) = coeff[i * ci + j * cj] one
// number at a time, broadcast against row j of src (`lanes` of it, rows src_row apart); dst's
// rows dst_row apart. Every product of a head that wants rows out: P·v, dS·k, dSᵀ·q, Pᵀ·dO.
template <bool kRound, bool kRoundCoefficients = kRound>
[[SG_AVX512]] inline void weighted_rows(const float* coeff, int64_t ci, int64_t cj, int64_t count,
                                        const float* src, int64_t src_row, int64_t terms,
                                        __mmask16 lanes, float* dst, int64_t dst_row) {
  __m512 rows[kMaxLength];
  for (int64_t j = 0; j < terms; ++j) {
    rows[j] = operand<kRound>(_mm512_maskz_loadu_ps(lanes, src + j * src_row));
  }
  for (int64_t i = 0; i < count; ++i) {
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < terms; ++j) {
      sum = _mm512_fmadd_ps(operand<kRoundCoefficients>(_mm512_set1_ps(coeff[i * ci + j * cj])),
                            rows[j], sum);
    }
    _mm512_mask_storeu_ps(dst + i * dst_row, lanes, sum);
  }
}

// For each key s, the queries t that may attend to it (bit t): from the mask bytes of one head
// (rows `row` apart, keys `col` apart), or every query where there is no mask.
void kept_queries(const uint8_t* mask, int64_t row, int64_t col, HeadSizes n, __mmask16* kept) {
  const auto all = static_cast<__mmask16>((1u << n.T) - 1);
  for (int64_t s = 0; s < n.S; ++s) {
    if (mask == nullptr || row == 0) {  // no mask, or one that is the same for every query
      kept[s] = mask == nullptr || mask[s * col] != 0 ? all : __mmask16{0};
      continue;
    }
    unsigned bits = 0;
    for (int64_t t = 0; t < n.T; ++t) bits |= (mask[t * row + s * col] != 0 ? 1u : 0u) << t;
    kept[s] = static_cast<__mmask16>(bits);
  }
}

// For each query t, the keys s it may attend to (bit s): the same mask read by rows.
void kept_keys(const uint8_t* mask, int64_t row, int64_t col, HeadSizes n, __mmask16* kept) {
  for (int64_t t = 0; t < n.T; ++t) {
    if (mask != nullptr && row == 0 && t > 0) {  // the same for every query
      kept[t] = kept[0];
      continue;
    }
    unsigned bits = 0;
    for (int64_t s = 0; s < n.S; ++s) {
      bits |= (mask == nullptr || mask[t * row + s * col] != 0 ? 1u : 0u) << s;
    }
    kept[t] = static_cast<__mmask16>(bits);
  }
}

// Lane s of the result: k[s, d] of one head's keys, k[s, d] at k[s * k_row + d * k_col]: a
// vector load where the keys come by columns (k_row = 1), else a gather.
[[SG_AVX512]] inline __m512 keys_column(const float* k, int64_t k_row, int64_t k_col, int64_t d,
                                        __mmask16 keys) {
  return k_row == 1 ? _mm512_maskz_loadu_ps(keys, k + d * k_col)
                    : column(k, k_row, d * k_col, keys);
}

// One head forward: p [T, S] (the weights, contiguous) and out [T, Dv] (rows `out_row` apart);
// k[s, d] at k[s * k_row + d * k_col].
template <bool kRound>
[[SG_AVX512]] void forward_head(const float* q, int64_t q_row, const float* k, int64_t k_row,
                                int64_t k_col, const float* v, int64_t v_row, const __mmask16* kept,
                                float scale, HeadSizes n, float* p, float* out, int64_t out_row) {
  __m512 q_t[kMaxLength];  // qᵀ: register d holds q[t, d] in lane t
  columns_of<kRound>(q, q_row, n.T, n.Dh, q_t);
  // The scores' columns, scaled, masked entries -inf; and each query's max over the keys.
  const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 e[kMaxLength];
  __m512 largest = minus_inf;
  for (int64_t s = 0; s < n.S; ++s) {
    __m512 sum = _mm512_setzero_ps();
    for (int64_t d = 0; d < n.Dh; ++d) {
      sum = _mm512_fmadd_ps(operand<kRound>(_mm512_set1_ps(k[s * k_row + d * k_col])), q_t[d], sum);
    }
    e[s] = _mm512_mask_mul_ps(minus_inf, kept[s], sum, _mm512_set1_ps(scale));
    largest = _mm512_max_ps(largest, e[s]);
  }
  // exp(score - max) where kept (a query with nothing kept: no lane, so no -inf - -inf).
  __m512 total = _mm512_setzero_ps();
  for (int64_t s = 0; s < n.S; ++s) {
    e[s] = _mm512_maskz_mov_ps(kept[s], exp16(_mm512_sub_ps(e[s], largest)));
    total = _mm512_add_ps(total, e[s]);
  }
  const __mmask16 any = _mm512_cmp_ps_mask(total, _mm512_setzero_ps(), _CMP_GT_OQ);
  const __m512 inv = _mm512_maskz_div_ps(any, _mm512_set1_ps(1.0f), total);  // all masked: 0
  // P, column by column: a copy [s][t] to broadcast, and into p ([T, S]) transposed in registers
  // into its rows (a scatter per column costs more than the 64 shuffles).
  alignas(64) float p_t[kMaxLength * kMaxLength];
  for (int64_t s = 0; s < kMaxLength; ++s) {
    e[s] = s < n.S ? _mm512_mul_ps(e[s], inv) : _mm512_setzero_ps();
    _mm512_store_ps(p_t + s * kMaxLength, operand<kRound>(e[s]));  // as P·v reads it
  }
  avx512::transpose_16x16(e);
  const __mmask16 keys = first_lanes(n.S);
  for (int64_t t = 0; t < n.T; ++t) _mm512_mask_storeu_ps(p + t * n.S, keys, e[t]);
  // out[t] = Σ_s P[t, s] · v[s]
  weighted_rows<kRound, false>(p_t, 1, kMaxLength, n.T, v, v_row, n.S, first_lanes(n.Dv), out,
                               out_row);
}

// One head forward for a few queries (kT: decoding's one): the lanes are the keys instead. Lane
// s of column d of k is k[s, d], so each query's scores are one register; its softmax takes a
// max and a sum across the lanes, and its row of P is stored as it is (no scatter). Same p, out.
template <int kT, bool kRound>
[[SG_AVX512]] void forward_head_few_queries(const float* q, int64_t q_row, const float* k,
                                            int64_t k_row, int64_t k_col, const float* v,
                                            int64_t v_row, const __mmask16* kept, float scale,
                                            HeadSizes n, float* p, float* out, int64_t out_row) {
  const __mmask16 keys = first_lanes(n.S);
  // The queries' rows as products read them (rounded once each under autocast).
  alignas(64) float q_rows[kT][kMaxLength];
  for (int t = 0; t < kT; ++t) {
    _mm512_store_ps(q_rows[t],
                    operand<kRound>(_mm512_maskz_loadu_ps(first_lanes(n.Dh), q + t * q_row)));
  }
  // Sums over even and odd d apart (and s below): two chains of multiply-adds, not one.
  __m512 scores[kT], odd[kT];
  for (int t = 0; t < kT; ++t) scores[t] = odd[t] = _mm512_setzero_ps();
  int64_t d = 0;
  for (; d + 1 < n.Dh; d += 2) {
    const __m512 k_d = operand<kRound>(keys_column(k, k_row, k_col, d, keys));
    const __m512 k_next = operand<kRound>(keys_column(k, k_row, k_col, d + 1, keys));
    for (int t = 0; t < kT; ++t) {
      scores[t] = _mm512_fmadd_ps(_mm512_set1_ps(q_rows[t][d]), k_d, scores[t]);
      odd[t] = _mm512_fmadd_ps(_mm512_set1_ps(q_rows[t][d + 1]), k_next, odd[t]);
    }
  }
  for (int t = 0; t < kT; ++t) {
    if (d < n.Dh) {
      scores[t] =
          _mm512_fmadd_ps(_mm512_set1_ps(q_rows[t][d]),
                          operand<kRound>(keys_column(k, k_row, k_col, d, keys)), scores[t]);
    }
    scores[t] = _mm512_add_ps(scores[t], odd[t]);
  }
  const __m512 minus_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  // P's rows, also kept here (as P·v reads them): read back one number at a time from a masked
  // store to p, the loads would wait for the store (no forwarding from masked stores).
  alignas(64) float p_rows[kT][kMaxLength];
  for (int t = 0; t < kT; ++t) {
    __m512 row = _mm512_setzero_ps();  // a query with every key masked keeps P = 0
    if (kept[t] != 0) {
      const __m512 x = _mm512_mask_mul_ps(minus_inf, kept[t], scores[t], _mm512_set1_ps(scale));
      const __m512 e = _mm512_maskz_mov_ps(
          kept[t], exp16(_mm512_sub_ps(x, _mm512_set1_ps(_mm512_reduce_max_ps(x)))));
      row = _mm512_mul_ps(e, _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(e)));
    }
    _mm512_mask_storeu_ps(p + t * n.S, keys, row);
    _mm512_store_ps(p_rows[t], operand<kRound>(row));  // as P·v reads it
  }
  // out[t] = Σ_s P[t, s] · v[s], one row of v at a time
  const __mmask16 lanes_v = first_lanes(n.Dv);
  __m512 sums[kT], odd_sums[kT];
  for (int t = 0; t < kT; ++t) sums[t] = odd_sums[t] = _mm512_setzero_ps();
  int64_t s = 0;
  for (; s + 1 < n.S; s += 2) {
    const __m512 v_s = operand<kRound>(_mm512_maskz_loadu_ps(lanes_v, v + s * v_row));
    const __m512 v_next = operand<kRound>(_mm512_maskz_loadu_ps(lanes_v, v + (s + 1) * v_row));
    for (int t = 0; t < kT; ++t) {
      sums[t] = _mm512_fmadd_ps(_mm512_set1_ps(p_rows[t][s]), v_s, sums[t]);
      odd_sums[t] = _mm512_fmadd_ps(_mm512_set1_ps(p_rows[t][s + 1]), v_next, odd_sums[t]);
    }
  }
  for (int t = 0; t < kT; ++t) {
    if (s < n.S) {
      sums[t] =
          _mm512_fmadd_ps(_mm512_set1_ps(p_rows[t][s]),
                          operand<kRound>(_mm512_maskz_loadu_ps(lanes_v, v + s * v_row)), sums[t]);
    }
    _mm512_mask_storeu_ps(out + t * out_row, lanes_v, _mm512_add_ps(sums[t], odd_sums[t]));
  }
}

// One head backward, from dO [T, Dv] and the forward's p [T, S].
template <bool kRound>
[[SG_AVX512]] void backward_head(const float* d_out, int64_t d_out_row, const float* q,
                                 int64_t q_row, const float* k, int64_t k_row, const float* v,
                                 int64_t v_row, const float* p, float scale, HeadSizes n, float* dq,
                                 int64_t dq_row, float* dk, int64_t dk_row, float* dv,
                                 int64_t dv_row) {
  const __mmask16 lanes_h = first_lanes(n.Dh), lanes_v = first_lanes(n.Dv);
  __m512 d_out_t[kMaxLength];  // dOᵀ: register d holds dO[t, d] in lane t
  columns_of<kRound>(d_out, d_out_row, n.T, n.Dv, d_out_t);
  // dPᵀ[s] = Σ_d v[s, d] · dOᵀ[d]; Pᵀ[s] transposed from p; each query's Σ_s P ∘ dP.
  __m512 p_t[kMaxLength], dp_t[kMaxLength];
  columns_of(p, n.S, n.T, n.S, p_t);
  __m512 row_dot = _mm512_setzero_ps();
  for (int64_t s = 0; s < n.S; ++s) {
    __m512 sum = _mm512_setzero_ps();
    for (int64_t d = 0; d < n.Dv; ++d) {
      sum = _mm512_fmadd_ps(operand<kRound>(_mm512_set1_ps(v[s * v_row + d])), d_out_t[d], sum);
    }
    dp_t[s] = sum;
    row_dot = _mm512_fmadd_ps(p_t[s], sum, row_dot);
  }
  // dSᵀ[s] = scale · Pᵀ[s] ∘ (dPᵀ[s] - row_dot), kept as [s][t] to broadcast.
  alignas(64) float ds_t[kMaxLength * kMaxLength];
  const __m512 scale_v = _mm512_set1_ps(scale);
  for (int64_t s = 0; s < n.S; ++s) {
    const __m512 ds =
        _mm512_mul_ps(scale_v, _mm512_mul_ps(p_t[s], _mm512_sub_ps(dp_t[s], row_dot)));
    _mm512_store_ps(ds_t + s * kMaxLength, ds);
  }
  // dq[t] = Σ_s dS[t, s] · k[s]; dk[s] = Σ_t dS[t, s] · q[t]; dv[s] = Σ_t P[t, s] · dO[t]
  weighted_rows<kRound>(ds_t, 1, kMaxLength, n.T, k, k_row, n.S, lanes_h, dq, dq_row);
  weighted_rows<kRound>(ds_t, kMaxLength, 1, n.S, q, q_row, n.T, lanes_h, dk, dk_row);
  weighted_rows<kRound>(p, 1, n.S, n.S, d_out, d_out_row, n.T, lanes_v, dv, dv_row);
}

// The forward for these sizes: lanes the queries, or for a few queries the keys.
template <bool kRound>
auto head_forward_for(const HeadSizes& n) -> decltype(&forward_head<kRound>) {
  switch (n.T) {
    case 1:
      return forward_head_few_queries<1, kRound>;
    case 2:
      return forward_head_few_queries<2, kRound>;
    case 3:
      return forward_head_few_queries<3, kRound>;
    case 4:
      return forward_head_few_queries<4, kRound>;
    default:
      return forward_head<kRound>;
  }
}

// Whether the kernels take these tensors: float, AVX-512, lengths and head sizes <= 16, the head
// dim of every [B, H, rows, cols] operand contiguous (the keys' may be in columns instead, where
// `keys` is given).
bool fits(std::initializer_list<const Tensor*> heads, const HeadSizes& n,
          const Tensor* keys = nullptr) {
  if (!avx512::cpu_has_avx512()) return false;
  for (int64_t length : {n.T, n.S, n.Dh, n.Dv}) {
    if (length < 1 || length > kMaxLength) return false;
  }
  return float_heads(heads) && (keys == nullptr || float_keys(*keys));
}

// Heads per job of the pool: ~16K multiply-adds each.
int64_t heads_per_grain(const HeadSizes& n) {
  return std::max<int64_t>(1, (1 << 14) / (n.T * n.S * (n.Dh + n.Dv)));
}

}  // namespace

SG_END_GCC_BUG_105593

bool short_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                     double scale, const Tensor& out, const Tensor& weights, bool bfloat16) {
  const int64_t B = q.size(0), H = q.size(1);
  const HeadSizes n = HeadSizes::of(q, k, v);
  if (!fits({&q, &v, &out}, n, &k) || !weights.is_contiguous()) return false;
  const Heads hq(q), hk(k), hv(v), ho(out);
  const HeadMasks masks(mask);
  float* w = weights.data_ptr<float>();
  const bool few_queries = n.T <= kFewQueries;  // head_forward_for's choice
  const auto head_forward = bfloat16 ? head_forward_for<true>(n) : head_forward_for<false>(n);
  parallel_for(B * H, heads_per_grain(n), [&](int64_t lo, int64_t hi) {
    __mmask16 kept[kMaxLength];
    const uint8_t* kept_from = nullptr;  // heads that share a mask (stride 0) share `kept`
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t b = i / H, h = i % H;
      const uint8_t* head_mask = masks.at(b, h);
      if (i == lo || head_mask != kept_from) {
        (few_queries ? kept_keys : kept_queries)(head_mask, masks.row, masks.col, n, kept);
      }
      kept_from = head_mask;
      head_forward(hq.at(b, h), hq.row, hk.at(b, h), hk.row, hk.col, hv.at(b, h), hv.row, kept,
                   static_cast<float>(scale), n, w + i * n.T * n.S, ho.at(b, h), ho.row);
    }
  });
  return true;
}

bool short_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& weights, double scale, const Tensor& dq,
                              const Tensor& dk, const Tensor& dv, bool bfloat16) {
  const int64_t B = q.size(0), H = q.size(1);
  const HeadSizes n = HeadSizes::of(q, k, v);
  if (!fits({&grad, &q, &k, &v, &dq, &dk, &dv}, n) || !weights.is_contiguous()) return false;
  const Heads hg(grad), hq(q), hk(k), hv(v), hdq(dq), hdk(dk), hdv(dv);
  const float* w = weights.data_ptr<float>();
  parallel_for(B * H, heads_per_grain(n), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t b = i / H, h = i % H;
      (bfloat16 ? backward_head<true>
                : backward_head<false>)(hg.at(b, h), hg.row, hq.at(b, h), hq.row, hk.at(b, h),
                                        hk.row, hv.at(b, h), hv.row, w + i * n.T * n.S,
                                        static_cast<float>(scale), n, hdq.at(b, h), hdq.row,
                                        hdk.at(b, h), hdk.row, hdv.at(b, h), hdv.row);
    }
  });
  return true;
}

#else  // no AVX-512 kernel in this build: scaled_dot_product_attention composes the ops

bool short_attention(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double,
                     const Tensor&, const Tensor&, bool) {
  return false;
}

bool short_attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                              const Tensor&, double, const Tensor&, const Tensor&, const Tensor&,
                              bool) {
  return false;
}

#endif

}  // namespace sg::cpu
