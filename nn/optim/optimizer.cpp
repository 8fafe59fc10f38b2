#include "nn/optim/optimizer.h"

#include "autograd/cuda_graph.h"

#include <cmath>
#include <set>

namespace sg::optim {

Optimizer::Optimizer(std::string name) : name_(std::move(name)) {}

void Optimizer::add_group(std::vector<Tensor> params, double lr,
                          std::vector<std::string> buffer_names) {
  SG_CHECK(!params.empty(), "{}: got an empty parameter list", name_);
  check_lr(lr);
  for (const Tensor& p : params) {
    const size_t i = params_.size();
    SG_CHECK(p.defined(), "{}: parameter {} is an undefined tensor", name_, i);
    SG_CHECK(p.is_floating_point(), "{}: parameter {} must be float32 or float64, got {}", name_, i,
             p.dtype());
    SG_CHECK(p.is_leaf(),
             "{}: parameter {} (shape {}) is not a leaf; optimize the tensors you "
             "created (e.g. model.parameters()), not results of ops",
             name_, i, p.shape());
    SG_CHECK(!elements_may_overlap(p.shape(), p.strides()),
             "{}: parameter {} (shape {}, strides {}) has elements that share memory (an expanded "
             "view); each update would land on them more than once: optimize a .clone()",
             name_, i, p.shape(), p.strides());
    for (size_t j = 0; j < i; ++j) {
      SG_CHECK(!params_[j].is_same(p),
               "{}: parameter {} is the same tensor as parameter {}; it would be updated twice",
               name_, i, j);
    }
    params_.push_back(p);
    group_of_.push_back(groups_.size());
    param_steps_.push_back(0);
    for (auto& [_, per_param] : buffers_) per_param.emplace_back();
  }
  for (const std::string& b : buffer_names) buffers_[b].resize(params_.size());
  groups_.push_back({lr, lr, std::move(buffer_names)});
}

void Optimizer::check_group(size_t group) const {
  SG_CHECK(group < groups_.size(), "{}: no parameter group {} (it has {})", name_, group,
           groups_.size());
}

void Optimizer::check_lr(double lr) const {
  SG_CHECK(lr >= 0.0 && std::isfinite(lr), "{}: learning rate must be non-negative, got {}", name_,
           lr);
}

std::vector<Tensor> Optimizer::group_params(size_t group) const {
  check_group(group);
  std::vector<Tensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (group_of_[i] == group) out.push_back(params_[i]);
  }
  return out;
}

double Optimizer::lr(size_t group) const {
  check_group(group);
  return groups_[group].lr;
}

const std::vector<std::string>& Optimizer::buffer_names(size_t group) const {
  check_group(group);
  return groups_[group].buffer_names;
}

double Optimizer::initial_lr(size_t group) const {
  check_group(group);
  return groups_[group].initial_lr;
}

void Optimizer::set_lr(double lr) {
  check_lr(lr);
  for (Group& g : groups_) g.lr = lr;
}

void Optimizer::set_lr(size_t group, double lr) {
  check_group(group);
  check_lr(lr);
  groups_[group].lr = lr;
}

void Optimizer::step() {
  NoGradGuard no_grad;  // the updates are not part of any graph
  if (!params_.empty() && cuda::is_capturing(params_.front().device())) return step_in_capture();
  SG_CHECK(step_count_ < kMaxStepCount, "{}.step: the step count is at its limit, 2^53 = {}", name_,
           kMaxStepCount);
  ++step_count_;
  std::vector<size_t> updated;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    if (param_steps_[i] == 0) {
      for (const std::string& b : groups_[group_of_[i]].buffer_names) {
        buffers_[b][i] = zeros_like(params_[i]);
      }
    }
    ++param_steps_[i];
    updated.push_back(i);
  }
  update_all(updated);
}

void Optimizer::update_all(const std::vector<size_t>& updated) {
  for (const size_t i : updated) update(i, params_[i], params_[i].grad());
}

// In a CUDA graph capture nothing runs yet: the updates are recorded, and the host part of the step
// (the counts, then the subclass's values on the device) is done before each replay.
void Optimizer::step_in_capture() {
  std::vector<size_t> updated;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    SG_CHECK(param_steps_[i] > 0,
             "{}: parameter {} has no optimizer state yet; run one step eagerly before capturing "
             "the step in a CUDA graph (a graph would make, and zero, the state at every replay)",
             name_, i);
    updated.push_back(i);
  }
  if (updated.empty()) return;
  capture_updates(updated);
  cuda::before_each_replay(params_[updated.front()].device(), [this, updated] {
    ++step_count_;
    for (const size_t i : updated) ++param_steps_[i];
    before_replay(updated);
  });
}

void Optimizer::capture_updates(const std::vector<size_t>& /*updated*/) {
  SG_FAIL(
      "{}: cannot step inside a CUDA graph capture: its update takes the lr and the step count "
      "as host numbers, which a graph would freeze at today's values (Adam and AdamW without "
      "amsgrad read them from the device)",
      name_);
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
  std::vector<double> lrs;
  for (const Group& g : groups_) lrs.push_back(g.lr);
  out.emplace_back("lr", lrs.size() == 1 ? scalar_tensor(lrs[0], kFloat64)
                                         : from_vector(lrs, {static_cast<int64_t>(lrs.size())}));
  std::vector<int64_t> counts;
  for (size_t g = 0; g < groups_.size(); ++g)
    counts.push_back(static_cast<int64_t>(group_params(g).size()));
  out.emplace_back("params", from_vector(counts, {static_cast<int64_t>(counts.size())}));
  for (size_t i = 0; i < params_.size(); ++i) {
    if (param_steps_[i] == 0) continue;  // never updated: no state, as in PyTorch
    out.emplace_back(fmt::format("step.{}", i),
                     scalar_tensor(static_cast<double>(param_steps_[i]), kInt64));
    for (const auto& [name, per_param] : buffers_) {
      if (per_param[i].defined()) {
        out.emplace_back(fmt::format("{}.{}", name, i), per_param[i].detach());
      }
    }
  }
  return out;
}

bool Optimizer::is_bookkeeping_entry(const std::string& name) {
  return name == "step" || name == "lr" || name == "params" || name.starts_with("step.");
}

void Optimizer::load_state(const NamedTensors& state) {
  std::map<std::string, Tensor> entries;
  for (const auto& [name, t] : state) {
    SG_CHECK(t.defined(), "{}.load_state: entry '{}' is an undefined tensor", name_, name);
    SG_CHECK(entries.emplace(name, t).second, "{}.load_state: entry '{}' appears twice", name_,
             name);
  }
  auto find = [&](const std::string& name) -> const Tensor& {
    auto it = entries.find(name);
    SG_CHECK(it != entries.end(), "{}.load_state: missing entry '{}'", name_, name);
    return it->second;
  };
  // A step count is an integer: read through a double, a float64 2.5, a bool or a NaN would
  // become some count silently (or undefined behaviour), so only int64 is accepted.
  auto count = [&](const std::string& name) {
    const Tensor& t = find(name);
    SG_CHECK(t.dtype() == kInt64 && t.numel() == 1,
             "{}.load_state: entry '{}' must be one int64 step count, got {} of shape {}", name_,
             name, t.dtype(), t.shape());
    return t.item<int64_t>();
  };

  // Check and convert everything first, so that a bad checkpoint leaves the optimizer untouched.
  std::set<std::string> used{"step", "lr"};
  const int64_t step_count = count("step");
  SG_CHECK(step_count >= 0, "{}.load_state: entry 'step' = {} is negative", name_, step_count);
  SG_CHECK(step_count <= kMaxStepCount,
           "{}.load_state: entry 'step' = {} is above the largest step count, 2^53 = {}", name_,
           step_count, kMaxStepCount);
  const Tensor& lr_entry = find("lr");
  SG_CHECK(lr_entry.is_floating_point() && lr_entry.numel() == static_cast<int64_t>(groups_.size()),
           "{}.load_state: entry 'lr' must hold one float per parameter group ({}), got {} of "
           "shape {}",
           name_, groups_.size(), lr_entry.dtype(), lr_entry.shape());
  const std::vector<double> lrs = lr_entry.to_vector<double>();
  for (double lr : lrs) {
    SG_CHECK(std::isfinite(lr) && lr >= 0.0,
             "{}.load_state: entry 'lr' holds {}; a learning rate is finite and non-negative",
             name_, lr);
  }
  // The state of another model's parameters would load where names and shapes happen to agree
  // (one parameter's state into an optimizer of two, the second left without its moments).
  if (const auto it = entries.find("params"); it != entries.end()) {
    used.insert("params");
    const Tensor& t = it->second;
    SG_CHECK(t.dtype() == kInt64 && t.numel() == static_cast<int64_t>(groups_.size()),
             "{}.load_state: entry 'params' must hold one int64 count per parameter group ({}), "
             "got {} of shape {}",
             name_, groups_.size(), t.dtype(), t.shape());
    const std::vector<int64_t> saved = t.to_vector<int64_t>();
    for (size_t g = 0; g < groups_.size(); ++g) {
      SG_CHECK(saved[g] == static_cast<int64_t>(group_params(g).size()),
               "{}.load_state: the state is of {} parameter(s) in group {}, this optimizer has {} "
               "(the state of another model?)",
               name_, saved[g], g, group_params(g).size());
    }
  }
  std::vector<int64_t> param_steps(params_.size(), 0);
  std::map<std::string, std::vector<Tensor>> buffers;
  for (const auto& [name, _] : buffers_) buffers[name].resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string step_name = fmt::format("step.{}", i);
    if (!entries.count(step_name)) continue;  // parameter i was never updated
    used.insert(step_name);
    param_steps[i] = count(step_name);
    SG_CHECK(param_steps[i] >= 1 && param_steps[i] <= step_count,
             "{}.load_state: entry '{}' = {} is not a step count in [1, step = {}] (a parameter "
             "never updated has no entry)",
             name_, step_name, param_steps[i], step_count);
    for (const std::string& name : groups_[group_of_[i]].buffer_names) {
      const std::string key = fmt::format("{}.{}", name, i);
      auto it = entries.find(key);
      SG_CHECK(it != entries.end(), "{}.load_state: missing entry '{}' (parameter {} has '{}')",
               name_, key, i, step_name);
      SG_CHECK(it->second.shape() == params_[i].shape(),
               "{}.load_state: entry '{}' has shape {} but parameter {} has shape {}", name_, key,
               it->second.shape(), i, params_[i].shape());
      SG_CHECK(it->second.is_floating_point(), "{}.load_state: entry '{}' must be floating, got {}",
               name_, key, it->second.dtype());
      Tensor& copy = buffers[name][i];
      copy = empty_like(params_[i]);
      NoGradGuard no_grad;
      copy.copy_(it->second.to(params_[i].device()));
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
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].lr = lrs[g];
  param_steps_ = std::move(param_steps);
  buffers_ = std::move(buffers);
}

}  // namespace sg::optim
