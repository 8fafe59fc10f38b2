#include "nn/optim/sgd.h"

namespace sg::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<SGDParamGroup>{{.params = std::move(params)}}, options) {}

SGD::SGD(std::vector<SGDParamGroup> groups, SGDOptions defaults)
    : Optimizer("SGD"), defaults_(defaults) {
  SG_CHECK(!groups.empty(), "SGD: got an empty parameter list");
  for (const SGDParamGroup& group : groups) add_param_group(group);
}

void SGD::add_param_group(const SGDParamGroup& group) {
  SGDOptions o = defaults_;
  o.lr = group.lr.value_or(o.lr);
  o.momentum = group.momentum.value_or(o.momentum);
  o.dampening = group.dampening.value_or(o.dampening);
  o.weight_decay = group.weight_decay.value_or(o.weight_decay);
  o.nesterov = group.nesterov.value_or(o.nesterov);
  SG_CHECK(o.momentum >= 0.0, "SGD: momentum must be non-negative, got {}", o.momentum);
  SG_CHECK(o.weight_decay >= 0.0, "SGD: weight_decay must be non-negative, got {}", o.weight_decay);
  SG_CHECK(!o.nesterov || (o.momentum > 0.0 && o.dampening == 0.0),
           "SGD: nesterov momentum needs momentum > 0 and dampening 0, got momentum {} and "
           "dampening {}",
           o.momentum, o.dampening);
  // Only SGD with momentum keeps a buffer: plain SGD has no state to save.
  std::vector<std::string> buffers;
  if (o.momentum != 0.0) buffers.push_back("momentum_buffer");
  add_group(group.params, o.lr, buffers);
  group_options_.push_back(o);
}

const SGDOptions& SGD::options(size_t group) const {
  SG_CHECK(group < group_options_.size(), "SGD: no parameter group {} (it has {})", group,
           group_options_.size());
  return group_options_[group];
}

void SGD::update(size_t i, Tensor& param, const Tensor& grad) {
  // --8<-- [start:ex05.sgd_update]
  const SGDOptions& o = options(group_of(i));
  Tensor d = grad;
  if (o.weight_decay != 0.0) d = d + param * o.weight_decay;  // a new tensor: grad stays as is
  if (o.momentum != 0.0) {
    Tensor& b = buffer("momentum_buffer", i);
    if (param_step(i) == 1) {
      b.copy_(d);  // PyTorch starts the buffer at the first gradient, undamped
    } else {
      b.mul_(o.momentum).add_(d, 1.0 - o.dampening);
    }
    d = o.nesterov ? d + b * o.momentum : b;
  }
  param.add_(d, -lr(group_of(i)));
  // --8<-- [end:ex05.sgd_update]
}

}  // namespace sg::optim
