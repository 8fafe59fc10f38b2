#include "nn/optim/optimizer.h"

#include <cstdlib>
#include <set>

namespace sg::optim {

Optimizer::Optimizer(std::string name, std::vector<Tensor> params, double lr,
                     std::vector<std::string> buffer_names)
    : name_(std::move(name)), params_(std::move(params)), lr_(lr), initial_lr_(lr) {
  SG_CHECK(!params_.empty(), "{}: got an empty parameter list", name_);
  SG_CHECK(lr >= 0.0, "{}: learning rate must be non-negative, got {}", name_, lr);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    SG_CHECK(p.defined(), "{}: parameter {} is an undefined tensor", name_, i);
    SG_CHECK(p.is_floating_point(), "{}: parameter {} must be float32 or float64, got {}", name_, i,
             p.dtype());
    SG_CHECK(p.is_leaf(),
             "{}: parameter {} (shape {}) is not a leaf; optimize the tensors you "
             "created (e.g. model.parameters()), not results of ops",
             name_, i, p.shape());
    for (size_t j = 0; j < i; ++j) {
      SG_CHECK(!params_[j].is_same(p),
               "{}: parameter {} is the same tensor as parameter {}; it would be updated twice",
               name_, i, j);
    }
  }
  param_steps_.assign(params_.size(), 0);
  for (auto& b : buffer_names) buffers_[b].resize(params_.size());
}

void Optimizer::set_lr(double lr) {
  SG_CHECK(lr >= 0.0, "{}: learning rate must be non-negative, got {}", name_, lr);
  lr_ = lr;
}

void Optimizer::step() {
  NoGradGuard no_grad;  // the updates are not part of any graph
  ++step_count_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor grad = params_[i].grad();
    if (!grad.defined()) continue;
    if (param_steps_[i] == 0) {
      for (auto& [_, per_param] : buffers_) per_param[i] = zeros_like(params_[i]);
    }
    ++param_steps_[i];
    update(i, params_[i], grad);
  }
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.set_grad(Tensor());
}

Tensor& Optimizer::buffer(const std::string& name, size_t i) {
  auto it = buffers_.find(name);
  SG_CHECK(it != buffers_.end(), "{}: no state buffer named '{}'", name_, name);
  return it->second[i];
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  out.emplace_back("step", scalar_tensor(static_cast<double>(step_count_), kInt64));
  out.emplace_back("lr", scalar_tensor(lr_, kFloat64));
  for (size_t i = 0; i < params_.size(); ++i) {
    if (param_steps_[i] == 0) continue;  // never updated: no state, as in PyTorch
    out.emplace_back(fmt::format("step.{}", i),
                     scalar_tensor(static_cast<double>(param_steps_[i]), kInt64));
    for (const auto& [name, per_param] : buffers_) {
      out.emplace_back(fmt::format("{}.{}", name, i), per_param[i].detach());
    }
  }
  return out;
}

void Optimizer::load_state(const NamedTensors& state) {
  std::map<std::string, Tensor> entries;
  for (const auto& [name, t] : state) {
    SG_CHECK(t.defined(), "{}.load_state: entry '{}' is an undefined tensor", name_, name);
    SG_CHECK(entries.emplace(name, t).second, "{}.load_state: entry '{}' appears twice", name_,
             name);
  }
  auto scalar = [&](const std::string& name) {
    auto it = entries.find(name);
    SG_CHECK(it != entries.end(), "{}.load_state: missing entry '{}'", name_, name);
    SG_CHECK(it->second.numel() == 1,
             "{}.load_state: entry '{}' must hold one number, got shape {}", name_, name,
             it->second.shape());
    return it->second.item<double>();
  };

  // Check and convert everything first, so that a bad checkpoint leaves the optimizer untouched.
  std::set<std::string> used{"step", "lr"};
  const int64_t step_count = static_cast<int64_t>(scalar("step"));
  const double lr = scalar("lr");
  SG_CHECK(step_count >= 0 && lr >= 0.0, "{}.load_state: step {} and lr {} must be non-negative",
           name_, step_count, lr);
  std::vector<int64_t> param_steps(params_.size(), 0);
  std::map<std::string, std::vector<Tensor>> buffers;
  for (const auto& [name, _] : buffers_) buffers[name].resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string step_name = fmt::format("step.{}", i);
    if (!entries.count(step_name)) continue;  // parameter i was never updated
    used.insert(step_name);
    param_steps[i] = static_cast<int64_t>(scalar(step_name));
    for (auto& [name, per_param] : buffers) {
      const std::string key = fmt::format("{}.{}", name, i);
      auto it = entries.find(key);
      SG_CHECK(it != entries.end(), "{}.load_state: missing entry '{}' (parameter {} has '{}')",
               name_, key, i, step_name);
      SG_CHECK(it->second.shape() == params_[i].shape(),
               "{}.load_state: entry '{}' has shape {} but parameter {} has shape {}", name_, key,
               it->second.shape(), i, params_[i].shape());
      per_param[i] = empty_like(params_[i]);
      NoGradGuard no_grad;
      per_param[i].copy_(it->second.to(params_[i].device()));
      used.insert(key);
    }
  }
  std::vector<std::string> kept{"step"};
  for (const auto& [name, _] : buffers_) kept.push_back(name);
  for (const auto& [name, _] : entries) {
    SG_CHECK(used.count(name),
             "{}.load_state: unexpected entry '{}' (this optimizer has {} parameters and keeps "
             "{} per parameter)",
             name_, name, params_.size(), fmt::join(kept, ", "));
  }

  step_count_ = step_count;
  lr_ = lr;
  param_steps_ = std::move(param_steps);
  buffers_ = std::move(buffers);
}

}  // namespace sg::optim
