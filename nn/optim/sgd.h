// Stochastic gradient descent with momentum, PyTorch's torch.optim.SGD update rule:
//   d = g + weight_decay · p                         (L2 penalty, folded into the gradient)
//   b = d at the first step, then b = momentum · b + (1 - dampening) · d
//   d = d + momentum · b (nesterov)   or   d = b
//   p = p - lr · d
//
//   sg::optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
#pragma once

#include "nn/optim/optimizer.h"

namespace sg::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening 0
};

class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  const SGDOptions& options() const { return options_; }

 protected:
  void update(size_t i, Tensor& param, const Tensor& grad) override;

 private:
  SGDOptions options_;
};

}  // namespace sg::optim
