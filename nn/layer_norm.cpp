#include "nn/layer_norm.h"

namespace sg::nn {

LayerNorm::LayerNorm(Shape shape, double eps_, bool elementwise_affine)
    : UnaryModule("LayerNorm"), normalized_shape(std::move(shape)), eps(eps_) {
  SG_CHECK(!normalized_shape.empty(), "LayerNorm: normalized_shape must not be empty");
  if (elementwise_affine) {
    weight = register_parameter("weight", ones(normalized_shape));
    bias = register_parameter("bias", zeros(normalized_shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  // The fused op: the same math as layer_norm() below, with a hand-written backward.
  return fused_layer_norm(x, normalized_shape, weight, bias, eps);
}

std::string LayerNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", normalized_shape, eps, weight.defined());
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool matches = x.dim() >= k;
  for (int64_t i = 0; matches && i < k; ++i)
    matches = x.size(x.dim() - k + i) == normalized_shape[i];
  SG_CHECK(matches, "layer_norm: input of shape {} does not end with normalized_shape {}",
           x.shape(), normalized_shape);
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < k; ++i) dims.push_back(x.dim() - k + i);
  // Composed from primitives, so autograd derives the backward; the biased variance (divide by n,
  // not n - 1) is what LayerNorm uses.
  Tensor mean = x.mean(dims, /*keepdim=*/true);
  Tensor centered = x - mean;
  Tensor var = (centered * centered).mean(dims, /*keepdim=*/true);
  Tensor y = centered * (var + eps).rsqrt();
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
}

}  // namespace sg::nn
