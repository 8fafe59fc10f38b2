// Scaled dot-product attention, softmax(q kᵀ / √Dh) v, and the two masks a Transformer feeds it.
//
//   auto src_mask = sg::nn::make_padding_mask(src, /*pad=*/0);     // [B, 1, 1, S]
//   auto [out, w] = sg::nn::scaled_dot_product_attention(q, k, v, src_mask);
//   // q [B, H, T, Dh], k [B, H, S, Dh], v [B, H, S, Dv] -> out [B, H, T, Dv], w [B, H, T, S]
//
// Mask convention (used everywhere in scratchgrad): a bool tensor, TRUE = MAY ATTEND. This is the
// convention of The Annotated Transformer and the opposite of torch.nn.MultiheadAttention's
// attn_mask / key_padding_mask, where true means "ignore".
#pragma once

#include "autograd/autograd.h"

namespace sg::nn {

struct AttentionOutput {
  Tensor output;   // [..., T, Dv]
  Tensor weights;  // [..., T, S]: the softmax probabilities (before dropout); rows sum to 1
};

// q [..., T, Dh], k [..., S, Dh], v [..., S, Dv]; mask bool, broadcastable to [..., T, S]. Scores
// are scaled by 1/√Dh (Dh = q's last dim: the per-head size, not d_model).
// A row whose keys are all masked (e.g. a query that is itself padding, or an empty source) gets
// all-zero weights, so its output row is 0 and its gradient is 0 — never NaN.
// dropout_p drops attention weights (not the returned ones) only when `training`.
AttentionOutput scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& mask = Tensor(), double dropout_p = 0.0,
                                             bool training = false);

// tokens [B, S] int64 -> bool [B, 1, 1, S]: true where the token is real (not `pad`). Broadcasts
// over heads and query positions: no query may look at a padding key.
Tensor make_padding_mask(const Tensor& tokens, int64_t pad);

// bool [1, 1, T, T], true on and below the diagonal: query t may look at keys 0..t only.
Tensor make_causal_mask(int64_t T, Device device = kCPU);

}  // namespace sg::nn
