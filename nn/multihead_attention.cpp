#include "nn/multihead_attention.h"

#include <cmath>
#include <tuple>

namespace sg::nn {

MultiheadAttention::MultiheadAttention(int64_t d_model_, int64_t heads_, double dropout_, bool bias)
    : Module("MultiheadAttention"), d_model(d_model_), heads(heads_), dropout(dropout_) {
  SG_CHECK(d_model > 0 && heads > 0,
           "MultiheadAttention: d_model and heads must be positive, got {} and {}", d_model, heads);
  SG_CHECK(d_model % heads == 0, "MultiheadAttention: d_model {} is not divisible by heads {}",
           d_model, heads);
  SG_CHECK(dropout >= 0.0 && dropout < 1.0, "MultiheadAttention: dropout must be in [0, 1), got {}",
           dropout);
  head_dim = d_model / heads;
  // Each projection is one [D, D] matrix shared by all heads: head h uses rows h*Dh..(h+1)*Dh of
  // its output, which mix ALL d_model input features (not just the head's own slice).
  w_q = register_module("w_q", std::make_shared<Linear>(d_model, d_model, bias));
  w_k = register_module("w_k", std::make_shared<Linear>(d_model, d_model, bias));
  w_v = register_module("w_v", std::make_shared<Linear>(d_model, d_model, bias));
  w_o = register_module("w_o", std::make_shared<Linear>(d_model, d_model, bias));
}

Tensor MultiheadAttention::split_heads(const Tensor& x) const {
  // --8<-- [start:ex08.split_heads]
  // [B, L, D] -> [B, L, H, Dh] (a view: D is contiguous) -> [B, H, L, Dh] (strides swapped).
  return x.view({x.size(0), x.size(1), heads, head_dim}).transpose(1, 2);
  // --8<-- [end:ex08.split_heads]
}

AttentionOutput MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                            const Tensor& value, const Tensor& mask) {
  SG_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3,
           "MultiheadAttention: expected query, key and value of shape [B, L, D], got {}, {} and "
           "{}",
           query.shape(), key.shape(), value.shape());
  SG_CHECK(query.size(2) == d_model && key.size(2) == d_model && value.size(2) == d_model,
           "MultiheadAttention: expected last dim {} (d_model), got shapes {}, {} and {}", d_model,
           query.shape(), key.shape(), value.shape());
  SG_CHECK(query.size(0) == key.size(0) && key.size(0) == value.size(0),
           "MultiheadAttention: batch sizes differ: query {}, key {}, value {}", query.shape(),
           key.shape(), value.shape());
  SG_CHECK(key.size(1) == value.size(1),
           "MultiheadAttention: key {} and value {} must have the same length S", key.shape(),
           value.shape());
  // Keys and values are split with their own length S: in cross-attention S != T.
  AttentionOutput out = attend(query, project_keys(key), project_values(value), mask);
  out.output = call_forward_hooks(out.output);
  return out;
}

Tensor MultiheadAttention::project_keys(const Tensor& key) const {
  return split_heads(w_k->forward(key));  // [B, H, S, Dh]
}

Tensor MultiheadAttention::project_values(const Tensor& value) const {
  return split_heads(w_v->forward(value));  // [B, H, S, Dh]
}

AttentionOutput MultiheadAttention::attend(const Tensor& query, const Tensor& k, const Tensor& v,
                                           const Tensor& mask) {
  SG_CHECK(query.dim() == 3 && query.size(2) == d_model,
           "MultiheadAttention: expected query of shape [B, T, {}], got {}", d_model,
           query.shape());
  Tensor q = split_heads(w_q->forward(query));  // [B, H, T, Dh]
  // A [B, T, S] mask has no head dim; give it one so B lines up with B, not with H.
  Tensor m = mask.defined() && mask.dim() == 3 ? mask.unsqueeze(1) : mask;
  AttentionOutput a;
  if (dropout == 0.0 || !is_training()) {
    // One op where the backend has an attention kernel (the composed version where it has none):
    // scaled_dot_product_attention's math without dropout.
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
    std::tie(a.output, a.weights) = fused_attention(q, k, v, m, scale);
  } else {
    a = scaled_dot_product_attention(q, k, v, m, dropout, is_training());
  }
  return {w_o->forward(merge_heads(a.output)), a.weights};
}

Tensor MultiheadAttention::merge_heads(const Tensor& x) const {
  // --8<-- [start:ex08.merge_heads]
  // [B, H, T, Dh] -> [B, T, H, Dh] -> [B, T, D]: a copy, except where fused_attention made the
  // output, already laid out [B, T, H, Dh] (then a view).
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), d_model});
  // --8<-- [end:ex08.merge_heads]
}

std::string MultiheadAttention::extra_repr() const {
  return fmt::format("d_model={}, heads={}, head_dim={}, dropout={}", d_model, heads, head_dim,
                     dropout);
}

}  // namespace sg::nn
