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
  return call_forward_hooks(fused_layer_norm(x, normalized_shape, weight, bias, eps));
}

std::string LayerNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", normalized_shape, eps, weight.defined());
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  for (const Tensor* t : {&x, &weight, &bias}) {
    if (t->defined() && t->dtype() == kBFloat16) refuse_bfloat16("layer_norm");
  }
  // mean, sub, mul and rsqrt (autograd/ops/normalization.cpp)
  return layer_norm_composed(x, normalized_shape, weight, bias, eps);
}

}  // namespace sg::nn
