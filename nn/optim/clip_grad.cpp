#include "nn/optim/clip_grad.h"

#include <cmath>

namespace sg::optim {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  SG_CHECK(max_norm >= 0.0, "clip_grad_norm_: max_norm must be non-negative, got {}", max_norm);
  SG_CHECK(norm_type > 0.0, "clip_grad_norm_: norm_type must be positive (or INFINITY), got {}",
           norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return zeros({});

  // The norm of each gradient, then the norm of those norms: ‖(‖g1‖, ‖g2‖, ...)‖ = ‖all of g‖.
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) {
    Tensor a = g.abs();
    if (std::isinf(norm_type)) {
      norms.push_back(a.numel() == 0 ? zeros({}, g.options()) : amax(a));
    } else if (norm_type == 2.0) {
      norms.push_back((g * g).sum().sqrt());
    } else {
      norms.push_back(a.pow(norm_type).sum().pow(1.0 / norm_type));
    }
  }
  // Gradients of several float dtypes (a float64 head on a float32 model) are measured together
  // in the widest: stack takes one dtype.
  for (const Tensor& n : norms) {
    if (n.dtype() != norms.front().dtype()) {
      for (Tensor& m : norms) m = m.to(kFloat64);
      break;
    }
  }
  Tensor all = stack(norms);
  Tensor total = std::isinf(norm_type) ? amax(all)
                 : norm_type == 2.0    ? (all * all).sum().sqrt()
                                       : all.pow(norm_type).sum().pow(1.0 / norm_type);

  // clamp(max_norm / (total + 1e-6), max = 1): gradients already small enough are left alone
  // (multiplied by exactly 1, without a host round trip to compare).
  Tensor coefficient = (max_norm / (total + 1e-6)).clamp(std::nullopt, 1.0);
  for (Tensor& g : grads) g.mul_(coefficient);
  return total;
}

}  // namespace sg::optim
