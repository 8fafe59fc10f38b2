// Stochastic gradient descent with momentum, PyTorch's torch.optim.SGD update rule:
//   d = g + weight_decay · p                         (L2 penalty, folded into the gradient)
//   b = d at the first step, then b = momentum · b + (1 - dampening) · d
//   d = d + momentum · b (nesterov)   or   d = b
//   p = p - lr · d
//
//   sg::optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
//   // Parameter groups: a field a group leaves unset takes the optimizer's (the defaults).
//   sg::optim::SGD opt({{.params = body}, {.params = head, .lr = 0.01}}, {.lr = 0.1});
#pragma once

#include <initializer_list>
#include <optional>

#include "nn/optim/optimizer.h"

namespace sg::optim {

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening 0
};

// A parameter group of SGD: its parameters, and the options that differ from the optimizer's.
struct SGDParamGroup {
  std::vector<Tensor> params;
  std::optional<double> lr, momentum, dampening, weight_decay;
  std::optional<bool> nesterov;
};

class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  SGD(std::vector<SGDParamGroup> groups, SGDOptions defaults = {});
  // Groups written in place, {{.params = a}, {.params = b, .lr = 0.1}} (and `{}`, no groups).
  SGD(std::initializer_list<SGDParamGroup> groups, SGDOptions defaults = {})
      : SGD(std::vector<SGDParamGroup>(groups), defaults) {}
  // torch.optim's add_param_group: parameters added later (e.g. layers unfrozen for fine-tuning).
  void add_param_group(const SGDParamGroup& group);
  // A group's options, the defaults filled in.
  const SGDOptions& options(size_t group = 0) const;

 protected:
  void update(size_t i, Tensor& param, const Tensor& grad) override;

 private:
  SGDOptions defaults_;
  std::vector<SGDOptions> group_options_;
};

}  // namespace sg::optim
