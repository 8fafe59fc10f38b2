// Dropout: in training, zeroes each element with probability p and scales the survivors by
// 1/(1-p) (inverted dropout), so expected values match eval mode, where it is the identity.
#pragma once

#include "nn/module.h"

namespace sg::nn {

class Dropout : public UnaryModule {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override {
    return call_forward_hooks(dropout(x, p, is_training()));
  }
  double p;

 protected:
  std::string extra_repr() const override { return fmt::format("p={}", p); }
};

}  // namespace sg::nn
