// Attention over heads of up to 64 keys (backend.h: attention, attention_backward) where
// short_attention.cpp's registers do not reach: the medium copy-task model's 64-long sequences
// with heads of 32, the annotated model's heads of 64. Composed from ops, such an attention is
// two batched products whose [B, H] head views do not merge into one batch stride (so q, k, v
// are copied first, and the gradients after), a scale, a masked softmax, and twice that backward
// (bench/NOTES.md).
//
// Here one head at a time is a few narrow_gemm calls (every product of a head has at most 64
// output columns: S keys, or a head size) that read q, k, v and dO in place, with the strides of
// the projections they were split from, and write the output and dq, dk, dv the same way; the
// softmax runs on each head's rows while they are in cache (short_softmax.h):
//   forward   P = masked_softmax(q·(scale kᵀ)), out = P·v         (P: the weights)
//   backward  dP' = dO·(scale vᵀ), dS = P ∘ (dP' - rowsum(P ∘ dP')), dq = dS·k, dk = dSᵀ·q,
//             dv = Pᵀ·dO
// The scale rides on the one operand each way that is copied into rows anyway (kᵀ, vᵀ: narrow_gemm
// wants its b in rows): softmax's backward is linear in its incoming gradient, so scaling dP
// scales dS. Every head is computed on its own: the same bits with any number of threads. Under
// autocast (`bfloat16`) each product reads its operands rounded to bfloat16: copies of the head's
// q, k, v, dO and of P, and scale·kᵀ, scale·vᵀ and dS rounded in their buffers.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "autograd/backend/cpu_fast/attention.h"
#include "autograd/backend/cpu_fast/attention_heads.h"
#include "autograd/backend/cpu_fast/avx512_rows.h"
#include "autograd/backend/cpu_fast/narrow_gemm.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/backend/cpu_fast/short_softmax.h"
#include "autograd/backend/cpu_fast/transpose.h"
#include "autograd/bfloat16.h"

namespace sg::cpu {

namespace {

constexpr int64_t kMaxWidth = 64;  // S, Dh, Dv: narrow_gemm's and short_softmax's rows

// Whether these tensors fit: float, kernels for this CPU, S, Dh, Dv <= 64 (any T), the head dim
// of every [B, H, rows, cols] operand contiguous (the keys' may be in columns instead, where
// `keys` is given: a decoding cache's). Every product then has at most 64 columns and
// either a depth of at most 64 (S, Dh or Dv) or at most 64 rows (dk, dv: S rows over T queries),
// which narrow_gemm takes.
bool fits(std::initializer_list<const Tensor*> heads, const HeadSizes& n,
          const Tensor* keys = nullptr) {
  if (n.T < 1 || !short_softmax_fits(n.S)) return false;
  for (int64_t width : {n.S, n.Dh, n.Dv}) {
    if (width < 1 || width > kMaxWidth || !narrow_gemm_fits(1, width, 1)) return false;
  }
  return float_heads(heads) && (keys == nullptr || float_keys(*keys));
}

// scale · kᵀ [Dh, S] into rows: transposed from keys in rows, or a scaled copy of keys that come
// by columns (row = 1: kᵀ's rows already).
void scaled_keys_t(const float* k, int64_t k_row, int64_t k_col, const HeadSizes& n, float scale,
                   float* k_t) {
  if (k_col == 1) {
    transpose_into_rows(k, k_row, n.S, n.Dh, scale, k_t, n.S);
    return;
  }
  for (int64_t d = 0; d < n.Dh; ++d) {
    for (int64_t s = 0; s < n.S; ++s) k_t[d * n.S + s] = scale * k[s * k_row + d * k_col];
  }
}

// dst [rows, cols] = the rows of a matrix (`row` apart) rounded to bfloat16: a product's operand
// under autocast. (Only reached where narrow_gemm runs, so with AVX-512.)
void rounded_rows(const float* src, int64_t row, int64_t rows, int64_t cols, float* dst) {
  for (int64_t r = 0; r < rows; ++r) {
#ifdef SG_AVX512_ROWS
    avx512::round_floats_to_bfloat16(src + r * row, dst + r * cols, cols);
#else
    for (int64_t c = 0; c < cols; ++c) {
      dst[r * cols + c] = bfloat16_bits_to_float(float_to_bfloat16_bits(src[r * row + c]));
    }
#endif
  }
}

// A head's operand for a product: in place, or (bfloat16) a rounded copy in `copy`.
struct Operand {
  const float* data;
  int64_t row;
};
Operand operand(const float* data, int64_t row, int64_t rows, int64_t cols, bool bfloat16,
                std::vector<float>& copy) {
  if (!bfloat16) return {data, row};
  copy.resize(static_cast<size_t>(rows * cols));
  rounded_rows(data, row, rows, cols, copy.data());
  return {copy.data(), cols};
}

// Heads per job of the pool: ~64K multiply-adds each.
int64_t heads_per_grain(const HeadSizes& n) {
  return std::max<int64_t>(1, (1 << 16) / (n.T * n.S * (n.Dh + n.Dv)));
}

}  // namespace

bool gemm_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                    double scale, const Tensor& out, const Tensor& weights, bool bfloat16) {
  const int64_t B = q.size(0), H = q.size(1);
  const HeadSizes n = HeadSizes::of(q, k, v);
  if (!fits({&q, &v, &out}, n, &k) || !weights.is_contiguous()) return false;
  const Heads hq(q), hk(k), hv(v), ho(out);
  const HeadMasks masks(mask);
  float* w = weights.data_ptr<float>();
  parallel_for(B * H, heads_per_grain(n), [&](int64_t lo, int64_t hi) {
    std::vector<float> k_t(static_cast<size_t>(n.Dh * n.S));  // scale · kᵀ [Dh, S]
    std::vector<float> q_copy, p_copy, v_copy;                // rounded operands (bfloat16)
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t b = i / H, h = i % H;
      float* p = w + i * n.T * n.S;
      scaled_keys_t(hk.at(b, h), hk.row, hk.col, n, static_cast<float>(scale), k_t.data());
      if (bfloat16) rounded_rows(k_t.data(), n.S, n.Dh, n.S, k_t.data());
      const Operand qh = operand(hq.at(b, h), hq.row, n.T, n.Dh, bfloat16, q_copy);
      narrow_gemm(n.T, n.S, n.Dh, qh.data, qh.row, 1, k_t.data(), n.S, nullptr, p, n.S,
                  /*accumulate=*/false);
      short_softmax_rows(p, p, n.T, n.S, masks.at(b, h), masks.row, masks.col);
      const Operand ph =
          operand(p, n.S, n.T, n.S, bfloat16, p_copy);  // the weights stay as they are
      const Operand vh = operand(hv.at(b, h), hv.row, n.S, n.Dv, bfloat16, v_copy);
      narrow_gemm(n.T, n.Dv, n.S, ph.data, ph.row, 1, vh.data, vh.row, nullptr, ho.at(b, h), ho.row,
                  /*accumulate=*/false);
    }
  });
  return true;
}

bool gemm_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& weights, double scale, const Tensor& dq,
                             const Tensor& dk, const Tensor& dv, bool bfloat16) {
  const int64_t B = q.size(0), H = q.size(1);
  const HeadSizes n = HeadSizes::of(q, k, v);
  if (!fits({&grad, &q, &k, &v, &dq, &dk, &dv}, n) || !weights.is_contiguous()) return false;
  const Heads hg(grad), hq(q), hk(k), hv(v), hdq(dq), hdk(dk), hdv(dv);
  const float* w = weights.data_ptr<float>();
  parallel_for(B * H, heads_per_grain(n), [&](int64_t lo, int64_t hi) {
    std::vector<float> v_t(static_cast<size_t>(n.Dv * n.S));  // scale · vᵀ [Dv, S]
    std::vector<float> ds(static_cast<size_t>(n.T * n.S));    // dP', then dS in its place
    std::vector<float> g_copy, k_copy, q_copy, p_copy;        // rounded operands (bfloat16)
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t b = i / H, h = i % H;
      const float* p = w + i * n.T * n.S;
      const Operand d_out = operand(hg.at(b, h), hg.row, n.T, n.Dv, bfloat16, g_copy);
      transpose_into_rows(hv.at(b, h), hv.row, n.S, n.Dv, static_cast<float>(scale), v_t.data(),
                          n.S);
      if (bfloat16) rounded_rows(v_t.data(), n.S, n.Dv, n.S, v_t.data());
      narrow_gemm(n.T, n.S, n.Dv, d_out.data, d_out.row, 1, v_t.data(), n.S, nullptr, ds.data(),
                  n.S, /*accumulate=*/false);
      short_softmax_backward_rows(ds.data(), p, ds.data(), n.T, n.S);
      if (bfloat16) rounded_rows(ds.data(), n.S, n.T, n.S, ds.data());  // from here an operand only
      // dq = dS·k; dk = dSᵀ·q and dv = Pᵀ·dO read dS and P transposed, in place.
      const Operand kh = operand(hk.at(b, h), hk.row, n.S, n.Dh, bfloat16, k_copy);
      const Operand qh = operand(hq.at(b, h), hq.row, n.T, n.Dh, bfloat16, q_copy);
      const Operand ph = operand(p, n.S, n.T, n.S, bfloat16, p_copy);
      narrow_gemm(n.T, n.Dh, n.S, ds.data(), n.S, 1, kh.data, kh.row, nullptr, hdq.at(b, h),
                  hdq.row, /*accumulate=*/false);
      narrow_gemm(n.S, n.Dh, n.T, ds.data(), 1, n.S, qh.data, qh.row, nullptr, hdk.at(b, h),
                  hdk.row, /*accumulate=*/false);
      narrow_gemm(n.S, n.Dv, n.T, ph.data, 1, ph.row, d_out.data, d_out.row, nullptr, hdv.at(b, h),
                  hdv.row, /*accumulate=*/false);
    }
  });
  return true;
}

}  // namespace sg::cpu
