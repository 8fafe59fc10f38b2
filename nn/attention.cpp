#include "nn/attention.h"

#include <cmath>
#include <limits>

namespace sg::nn {

namespace {

void check_attention_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  SG_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2,
           "scaled_dot_product_attention: q, k and v need at least 2 dims, got shapes {}, {} and "
           "{}",
           q.shape(), k.shape(), v.shape());
  SG_CHECK(q.is_floating_point() && q.dtype() == k.dtype() && q.dtype() == v.dtype(),
           "scaled_dot_product_attention: q, k and v must share one floating dtype, got {}, {} "
           "and {}",
           q.dtype(), k.dtype(), v.dtype());
  if (q.dtype() == kBFloat16) refuse_bfloat16("scaled_dot_product_attention");
  SG_CHECK(q.size(-1) == k.size(-1),
           "scaled_dot_product_attention: q of shape {} and k of shape {} differ in the last dim "
           "(the head size Dh)",
           q.shape(), k.shape());
  SG_CHECK(k.size(-2) == v.size(-2),
           "scaled_dot_product_attention: k of shape {} and v of shape {} have different numbers "
           "of keys (dim -2)",
           k.shape(), v.shape());
  if (mask.defined()) {
    SG_CHECK(mask.dtype() == kBool,
             "scaled_dot_product_attention: mask must be bool (true = may attend), got {}",
             mask.dtype());
  }
}

}  // namespace

AttentionOutput scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& mask, double dropout_p, bool training) {
  check_attention_inputs(q, k, v, mask);
  // Dividing by √Dh keeps the variance of a score near 1 whatever the head size, so the softmax
  // does not saturate. Dh is q's last dim: the size of ONE head, not d_model.
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto [output, weights] = attention_composed(q, k, v, mask, scale, dropout_p, training);
  return {output, weights};
}

Tensor make_padding_mask(const Tensor& tokens, int64_t pad) {
  SG_CHECK(tokens.dtype() == kInt64 && tokens.dim() == 2,
           "make_padding_mask: expected int64 tokens of shape [B, S], got {} of shape {}",
           tokens.dtype(), tokens.shape());
  return (tokens != static_cast<double>(pad)).unsqueeze(1).unsqueeze(2);  // [B, 1, 1, S]
}

Tensor make_causal_mask(int64_t T, Device device) {
  // --8<-- [start:ex07.causal_mask]
  SG_CHECK(T >= 0, "make_causal_mask: length must be non-negative, got {}", T);
  const TensorOptions options = TensorOptions(kInt64).device(device);
  Tensor query = arange(static_cast<double>(T), options).view({T, 1});
  Tensor key = arange(static_cast<double>(T), options).view({1, T});
  return (key <= query).view({1, 1, T, T});  // key position <= query position
  // --8<-- [end:ex07.causal_mask]
}

}  // namespace sg::nn
