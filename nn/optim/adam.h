// Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019), with torch.optim's update rules.
// For each parameter p with gradient g, at its step t (1, 2, ...):
//   Adam:  g = g + weight_decay · p                      (L2: the decay goes through the moments)
//   AdamW: p = p · (1 - lr · weight_decay)               (decoupled: the decay skips the moments)
//   m = β1 · m + (1 - β1) · g                            (exp_avg: mean of the gradients)
//   v = β2 · v + (1 - β2) · g²                           (exp_avg_sq: mean of their squares)
//   v̂ = max(v̂, v) if amsgrad, else v                     (max_exp_avg_sq)
//   p = p - lr / (1 - β1^t) · m / (√v̂ / √(1 - β2^t) + eps)
// The (1 - β^t) factors undo the bias of moments that start at zero.
//
//   sg::optim::Adam opt(model.parameters(), {.lr = 1e-3, .betas = {0.9, 0.98}, .eps = 1e-9});
//   sg::optim::AdamW opt(model.parameters(), {.lr = 3e-4, .weight_decay = 0.1});
#pragma once

#include <utility>

#include "nn/optim/optimizer.h"

namespace sg::optim {

struct AdamOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
};

// The same fields; only the default weight decay differs (torch.optim.AdamW's 1e-2).
struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(std::string name, std::vector<Tensor> params, AdamOptions options, bool decoupled);
  void update(size_t i, Tensor& param, const Tensor& grad) override;

 private:
  AdamOptions options_;
  bool decoupled_weight_decay_;
};

class AdamW : public Adam {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
};

}  // namespace sg::optim
