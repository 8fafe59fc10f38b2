// Activation modules, for Sequential and FeedForward.
#pragma once

#include <string>

#include "nn/module.h"

namespace sg::nn {

class ReLU : public UnaryModule {
 public:
  ReLU() : UnaryModule("ReLU") {}
  Tensor forward(const Tensor& x) override { return call_forward_hooks(relu(x)); }
};

class GELU : public UnaryModule {
 public:
  explicit GELU(std::string mode = "none") : UnaryModule("GELU"), approximate(std::move(mode)) {
    gelu(zeros({1}), approximate);  // validates the mode now rather than at the first forward
  }
  Tensor forward(const Tensor& x) override { return call_forward_hooks(gelu(x, approximate)); }
  std::string approximate;

 protected:
  std::string extra_repr() const override { return fmt::format("approximate='{}'", approximate); }
};

}  // namespace sg::nn
