#include "nn/optim/adam.h"

#include <cmath>

namespace sg::optim {

namespace {
std::vector<std::string> adam_buffers(const AdamOptions& o) {
  if (o.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}
}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam("Adam", std::move(params), options, /*decoupled=*/false) {}

Adam::Adam(std::string name, std::vector<Tensor> params, AdamOptions options, bool decoupled)
    : Optimizer(name, std::move(params), options.lr, adam_buffers(options)),
      options_(options),
      decoupled_weight_decay_(decoupled) {
  const auto [beta1, beta2] = options.betas;
  SG_CHECK(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0,
           "{}: betas must be in [0, 1), got ({}, {})", name, beta1, beta2);
  SG_CHECK(options.eps >= 0.0, "{}: eps must be non-negative, got {}", name, options.eps);
  SG_CHECK(options.weight_decay >= 0.0, "{}: weight_decay must be non-negative, got {}", name,
           options.weight_decay);
}

void Adam::update(size_t i, Tensor& param, const Tensor& grad) {
  const AdamOptions& o = options_;
  const auto [beta1, beta2] = o.betas;
  if (!o.amsgrad) {
    // The same update as below, in one fused op (one pass instead of about ten kernels).
    adam_update_(param, grad, buffer("exp_avg", i), buffer("exp_avg_sq", i), lr(), beta1, beta2,
                 o.eps, o.weight_decay, decoupled_weight_decay_, param_step(i));
    return;
  }
  Tensor g = grad;
  if (o.weight_decay != 0.0) {
    if (decoupled_weight_decay_) {
      param.mul_(1.0 - lr() * o.weight_decay);
    } else {
      g = g + param * o.weight_decay;  // a new tensor: the stored gradient stays as is
    }
  }
  Tensor& m = buffer("exp_avg", i);
  Tensor& v = buffer("exp_avg_sq", i);
  m.mul_(beta1).add_(g, 1.0 - beta1);
  v.mul_(beta2).addcmul_(g, g, 1.0 - beta2);
  Tensor second_moment = v;
  if (o.amsgrad) {
    Tensor& v_max = buffer("max_exp_avg_sq", i);
    v_max.copy_(maximum(v_max, v));
    second_moment = v_max;
  }

  const double t = static_cast<double>(param_step(i));
  const double bias_correction1 = 1.0 - std::pow(beta1, t);
  const double bias_correction2 = 1.0 - std::pow(beta2, t);
  // PyTorch's order of operations, so results agree to the last bits that rounding allows.
  Tensor denom = second_moment.sqrt() / std::sqrt(bias_correction2);
  denom.add_(o.eps);
  param.addcdiv_(m, denom, -lr() / bias_correction1);
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions o)
    : Adam("AdamW", std::move(params),
           AdamOptions{.lr = o.lr,
                       .betas = o.betas,
                       .eps = o.eps,
                       .weight_decay = o.weight_decay,
                       .amsgrad = o.amsgrad},
           /*decoupled=*/true) {}

}  // namespace sg::optim
