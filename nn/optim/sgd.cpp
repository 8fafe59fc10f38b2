#include "nn/optim/sgd.h"

namespace sg::optim {

namespace {
// Only SGD with momentum keeps a buffer: plain SGD has no state to save.
std::vector<std::string> sgd_buffers(const SGDOptions& o) {
  if (o.momentum != 0.0) return {"momentum_buffer"};
  return {};
}
}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer("SGD", std::move(params), options.lr, sgd_buffers(options)), options_(options) {
  SG_CHECK(options.momentum >= 0.0, "SGD: momentum must be non-negative, got {}", options.momentum);
  SG_CHECK(options.weight_decay >= 0.0, "SGD: weight_decay must be non-negative, got {}",
           options.weight_decay);
  SG_CHECK(!options.nesterov || (options.momentum > 0.0 && options.dampening == 0.0),
           "SGD: nesterov momentum needs momentum > 0 and dampening 0, got momentum {} and "
           "dampening {}",
           options.momentum, options.dampening);
}

void SGD::update(size_t i, Tensor& param, const Tensor& grad) {
  // --8<-- [start:ex05.sgd_update]
  const SGDOptions& o = options_;
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
  param.add_(d, -lr());
  // --8<-- [end:ex05.sgd_update]
}

}  // namespace sg::optim
