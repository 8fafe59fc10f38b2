#include "nn/linear.h"

#include <cmath>

#include "nn/init.h"

namespace sg::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias)
    : UnaryModule("Linear"), in_features(in), out_features(out) {
  SG_CHECK(in > 0 && out > 0,
           "Linear: in_features and out_features must be positive, got {} and {}", in, out);
  weight = register_parameter("weight", empty({out, in}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    bias = register_parameter("bias", empty({out}));
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) {
  SG_CHECK(x.dim() >= 1 && x.size(-1) == in_features,
           "Linear: expected input with last dim {} (in_features), got shape {}", in_features,
           x.shape());
  // The fused op: the same math as linear() below, the product accumulated onto the bias.
  return call_forward_hooks(fused_linear(x, weight, bias));
}

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     bias.defined());
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  for (const Tensor* t : {&x, &weight, &bias}) {
    if (t->defined() && t->dtype() == kBFloat16) refuse_bfloat16("linear");
  }
  return linear_composed(x, weight, bias);  // matmul and add (autograd/ops/linear.cpp)
}

}  // namespace sg::nn
