#include "nn/optim/exponential_moving_average.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "nn/optim/optimizer.h"

namespace sg::optim {

namespace {

constexpr const char* kShadowPrefix = "shadow.";

}  // namespace

ExponentialMovingAverage::ExponentialMovingAverage(const nn::Module& module,
                                                   ExponentialMovingAverageOptions options)
    : options_(options) {
  SG_CHECK(options.decay >= 0.0 && options.decay <= 1.0,
           "ExponentialMovingAverage: decay must be in [0, 1], got {}", options.decay);
  NoGradGuard no_grad;
  for (const auto& [name, t] : module.state_dict())
    averaged_.emplace_back(name, t.detach().clone());
  SG_CHECK(!averaged_.empty(), "ExponentialMovingAverage: the module has no parameters or buffers");
}

double ExponentialMovingAverage::decay_at(int64_t k) const {
  if (!options_.use_num_updates) return options_.decay;
  const auto n = static_cast<double>(k);
  return std::min(options_.decay, (1.0 + n) / (10.0 + n));
}

nn::NamedTensors ExponentialMovingAverage::matching_state(const char* op,
                                                          const nn::Module& module) const {
  nn::NamedTensors current = module.state_dict();
  SG_CHECK(current.size() == averaged_.size(),
           "ExponentialMovingAverage.{}: the module has {} parameters and buffers, the average {} "
           "(pass the module the average was built from)",
           op, current.size(), averaged_.size());
  for (size_t i = 0; i < current.size(); ++i) {
    const auto& [name, t] = current[i];
    const auto& [avg_name, avg] = averaged_[i];
    SG_CHECK(
        name == avg_name && t.shape() == avg.shape(),
        "ExponentialMovingAverage.{}: the module's tensor {} is '{}' {}, the average's '{}' {} "
        "(pass the module the average was built from)",
        op, i, name, t.shape(), avg_name, avg.shape());
    // Another dtype would round one side silently (swap is bit for bit only in one dtype).
    SG_CHECK(t.dtype() == avg.dtype(),
             "ExponentialMovingAverage.{}: the module's '{}' is {}, the average's {} (the module "
             "changed dtype after the average was built from it; build the average again)",
             op, name, t.dtype(), avg.dtype());
  }
  return current;
}

void ExponentialMovingAverage::update(const nn::Module& module) {
  const nn::NamedTensors current = matching_state("update", module);
  SG_CHECK(num_updates_ < kMaxStepCount,
           "ExponentialMovingAverage.update: the count is at its limit, 2^53 = {}", kMaxStepCount);
  const double weight = 1.0 - decay_at(num_updates_ + 1);
  NoGradGuard no_grad;
  for (size_t i = 0; i < current.size(); ++i) {
    Tensor& avg = averaged_[i].second;
    const Tensor now = current[i].second.to(avg.device());
    if (avg.is_floating_point()) {
      // average + w · (current - average): a tensor that does not change (a positional table)
      // keeps its exact value, which decay · average + w · current would round.
      avg.add_(now - avg, weight);
    } else {
      avg.copy_(now);
    }
  }
  ++num_updates_;
}

void ExponentialMovingAverage::copy_to(nn::Module& module) const {
  nn::NamedTensors current = matching_state("copy_to", module);
  NoGradGuard no_grad;
  for (size_t i = 0; i < current.size(); ++i) current[i].second.copy_(averaged_[i].second);
}

void ExponentialMovingAverage::swap(nn::Module& module) {
  nn::NamedTensors current = matching_state("swap", module);
  NoGradGuard no_grad;
  for (size_t i = 0; i < current.size(); ++i) {
    Tensor& avg = averaged_[i].second;
    Tensor& weights = current[i].second;
    const Tensor trained = weights.clone();
    weights.copy_(avg);
    avg.copy_(trained);
  }
}

nn::NamedTensors ExponentialMovingAverage::state() const {
  nn::NamedTensors out;
  out.emplace_back("num_updates", scalar_tensor(static_cast<double>(num_updates_), kInt64));
  out.emplace_back("decay", scalar_tensor(options_.decay, kFloat64));
  for (const auto& [name, avg] : averaged_) out.emplace_back(kShadowPrefix + name, avg);
  return out;
}

void ExponentialMovingAverage::load_state(const nn::NamedTensors& state) {
  const char* op = "ExponentialMovingAverage.load_state";
  std::map<std::string, Tensor> entries;
  for (const auto& [name, t] : state) {
    SG_CHECK(t.defined(), "{}: entry '{}' is an undefined tensor", op, name);
    SG_CHECK(entries.emplace(name, t).second, "{}: entry '{}' appears twice", op, name);
  }
  auto find = [&](const std::string& name) -> const Tensor& {
    auto it = entries.find(name);
    SG_CHECK(it != entries.end(), "{}: missing entry '{}'", op, name);
    return it->second;
  };
  const Tensor& count = find("num_updates");
  SG_CHECK(count.dtype() == kInt64 && count.numel() == 1,
           "{}: entry 'num_updates' must be one int64 count, got {} of shape {}", op, count.dtype(),
           count.shape());
  const int64_t num_updates = count.item<int64_t>();
  SG_CHECK(num_updates >= 0, "{}: entry 'num_updates' = {} is negative", op, num_updates);
  SG_CHECK(num_updates <= kMaxStepCount,
           "{}: entry 'num_updates' = {} is above the largest count, 2^53 = {}", op, num_updates,
           kMaxStepCount);
  const Tensor& decay = find("decay");
  SG_CHECK(decay.is_floating_point() && decay.numel() == 1,
           "{}: entry 'decay' must be one float, got {} of shape {}", op, decay.dtype(),
           decay.shape());
  SG_CHECK(decay.item<double>() == options_.decay,
           "{}: the saved average has decay {}, this one {} (build it with the saved decay)", op,
           decay.item<double>(), options_.decay);

  // Check and convert every average before replacing any.
  std::vector<Tensor> loaded;
  for (const auto& [name, avg] : averaged_) {
    const std::string key = kShadowPrefix + name;
    const Tensor& t = find(key);
    SG_CHECK(t.shape() == avg.shape(), "{}: entry '{}' has shape {} but the average has {}", op,
             key, t.shape(), avg.shape());
    SG_CHECK(t.is_floating_point() == avg.is_floating_point(),
             "{}: entry '{}' is {} but the average is {}", op, key, t.dtype(), avg.dtype());
    loaded.push_back(t.to(avg.device()).to(avg.dtype()));
  }
  std::set<std::string> known{"num_updates", "decay"};
  for (const auto& [name, _] : averaged_) known.insert(kShadowPrefix + name);
  for (const auto& [name, _] : entries) {
    SG_CHECK(known.count(name),
             "{}: unexpected entry '{}' (an average keeps num_updates, decay and "
             "'shadow.<name>' for each of its {} tensors)",
             op, name, averaged_.size());
  }
  NoGradGuard no_grad;
  for (size_t i = 0; i < averaged_.size(); ++i) averaged_[i].second.copy_(loaded[i]);
  num_updates_ = num_updates;
}

}  // namespace sg::optim
