// LayerNorm over the last dims: y = (x - mean) / sqrt(var + eps) * weight + bias, where mean and
// the (biased) variance are taken over `normalized_shape`. weight starts at 1 and bias at 0.
//   sg::nn::LayerNorm norm({512});
//   auto y = norm(x);   // x [B, T, 512] -> y [B, T, 512], each position normalised on its own
#pragma once

#include "nn/module.h"

namespace sg::nn {

class LayerNorm : public UnaryModule {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;

  Shape normalized_shape;
  double eps;
  Tensor weight, bias;  // normalized_shape each, or undefined without elementwise_affine

 protected:
  std::string extra_repr() const override;
};

// The functional form, composed from primitives (mean, sub, mul, rsqrt) so that autograd derives
// its backward. weight and bias may be undefined. The module runs sg::fused_layer_norm instead
// (autograd/ops.h): the same values, one node with its backward written out where the backend has
// a layer-norm kernel (the fast CPU backend, CUDA), this composition where it has none (the
// reference CPU backend); the tests compare both.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps = 1e-5);

}  // namespace sg::nn
