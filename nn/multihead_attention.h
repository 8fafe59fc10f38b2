// Multi-head attention: project queries, keys and values with w_q, w_k, w_v, split d_model into
// `heads` slices of head_dim = d_model / heads, attend in every head at once, merge the heads back
// and project with w_o. Self-attention passes the same tensor three times; cross-attention takes
// queries from the decoder (T positions) and keys/values from the encoder output (S positions).
//   sg::nn::MultiheadAttention mha(/*d_model=*/512, /*heads=*/8);
//   auto [y, w] = mha(x, memory, memory, src_mask);   // x [B, T, 512], memory [B, S, 512]
//   // y [B, T, 512], w [B, 8, T, S]
#pragma once

#include <memory>

#include "nn/attention.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace sg::nn {

class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t d_model, int64_t heads, double dropout = 0.0, bool bias = true);

  // query [B, T, D], key and value [B, S, D] -> output [B, T, D], weights [B, H, T, S].
  // mask: bool, true = may attend, broadcastable to [B, H, T, S]: [B, 1, 1, S] (padding),
  // [1, 1, T, T] (causal), [T, S], or [B, T, S] (given a head dim here). See nn/attention.h.
  AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                          const Tensor& mask = Tensor());
  AttentionOutput operator()(const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& mask = Tensor()) {
    return forward(q, k, v, mask);
  }

  // The pieces of forward, for incremental decoding (nn/transformer_decoder.h caches the
  // projected keys and values of earlier positions instead of recomputing them):
  // key or value [B, S, D] -> [B, H, S, Dh];
  Tensor project_keys(const Tensor& key) const;
  Tensor project_values(const Tensor& value) const;
  // query [B, T, D] with already projected k, v [B, H, S, Dh] -> output [B, T, D].
  AttentionOutput attend(const Tensor& query, const Tensor& k, const Tensor& v,
                         const Tensor& mask = Tensor());

  int64_t d_model, heads, head_dim;
  double dropout;  // on the attention weights, in training only
  std::shared_ptr<Linear> w_q, w_k, w_v, w_o;

 protected:
  std::string extra_repr() const override;

 private:
  Tensor split_heads(const Tensor& x) const;  // [B, L, D] -> [B, H, L, Dh]
  Tensor merge_heads(const Tensor& x) const;  // [B, H, T, Dh] -> [B, T, D]
};

}  // namespace sg::nn
