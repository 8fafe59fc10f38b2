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
//   // Parameter groups: a field a group leaves unset takes the optimizer's (the defaults).
//   sg::optim::AdamW opt({{.params = weights}, {.params = biases_and_norms, .weight_decay = 0.0}},
//                        {.lr = 3e-4, .weight_decay = 0.1});
#pragma once

#include <initializer_list>
#include <optional>
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

// A parameter group of Adam or AdamW: its parameters, and the options that differ from the
// optimizer's (PyTorch's {"params": ..., "weight_decay": 0.0}).
struct AdamParamGroup {
  std::vector<Tensor> params;
  std::optional<double> lr;
  std::optional<std::pair<double, double>> betas;
  std::optional<double> eps, weight_decay;
  std::optional<bool> amsgrad;
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});
  Adam(std::vector<AdamParamGroup> groups, AdamOptions defaults = {});
  // Groups written in place, {{.params = a}, {.params = b, .lr = 0.1}} (and `{}`, no groups).
  Adam(std::initializer_list<AdamParamGroup> groups, AdamOptions defaults = {})
      : Adam(std::vector<AdamParamGroup>(groups), defaults) {}
  // torch.optim's add_param_group: parameters added later (e.g. layers unfrozen for fine-tuning).
  void add_param_group(const AdamParamGroup& group);
  // A group's options, the defaults filled in.
  const AdamOptions& options(size_t group = 0) const;

 protected:
  Adam(std::string name, std::vector<AdamParamGroup> groups, AdamOptions defaults, bool decoupled);
  void update(size_t i, Tensor& param, const Tensor& grad) override;
  // Each group's parameters in one adam_update_foreach_ (AMSGrad's one by one).
  void update_all(const std::vector<size_t>& updated) override;
  // CUDA graphs: the fused update reading each parameter's AdamStepScalars (the lr and the step's
  // bias corrections) from a device table that before_replay rewrites.
  void capture_updates(const std::vector<size_t>& updated) override;
  void before_replay(const std::vector<size_t>& updated) override;

 private:
  AdamOptions defaults_;
  std::vector<AdamOptions> group_options_;
  bool decoupled_weight_decay_;
  Tensor graph_step_scalars_;  // float64 [parameters, 3] on the device, while a graph lives
};

class AdamW : public Adam {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  AdamW(std::vector<AdamParamGroup> groups, AdamWOptions defaults = {});
  AdamW(std::initializer_list<AdamParamGroup> groups, AdamWOptions defaults = {})
      : AdamW(std::vector<AdamParamGroup>(groups), defaults) {}
};

}  // namespace sg::optim
