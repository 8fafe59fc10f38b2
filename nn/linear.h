// Linear: y = x Wᵀ + b, applied to the last dim. Weight [out, in], bias [out], both initialised
// like torch.nn.Linear (kaiming_uniform with a = √5, i.e. U(-1/√in, 1/√in)).
//   sg::nn::Linear fc(512, 2048);
//   auto y = fc(x);   // x [B, T, 512] -> y [B, T, 2048]
#pragma once

#include "nn/module.h"

namespace sg::nn {

class Linear : public UnaryModule {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;

  int64_t in_features, out_features;
  Tensor weight;  // [out, in]
  Tensor bias;    // [out], or undefined

 protected:
  std::string extra_repr() const override;
};

// The functional form: x [..., in], weight [out, in], bias [out] or undefined -> [..., out].
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace sg::nn
