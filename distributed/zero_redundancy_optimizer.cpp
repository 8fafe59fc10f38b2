#include "distributed/zero_redundancy_optimizer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "autograd/error.h"
#include "autograd/factory.h"
#include "autograd/grad_mode.h"

namespace sg::distributed {

namespace {

// Shard boundaries over parameters whose sizes sum to prefix[i] before parameter i: shard r ends
// where the running sum comes closest to r/N of the total, every shard keeping one parameter at
// least. Contiguous shards keep each rank's part of the all-gather in one piece.
std::vector<size_t> balanced_bounds(const std::vector<int64_t>& prefix, int ranks) {
  const size_t count = prefix.size() - 1;
  std::vector<size_t> bounds(static_cast<size_t>(ranks) + 1, 0);
  bounds.back() = count;
  for (size_t r = 1; r < static_cast<size_t>(ranks); ++r) {
    const double target = static_cast<double>(prefix[count]) * static_cast<double>(r) / ranks;
    const size_t lo = bounds[r - 1] + 1, hi = count - (static_cast<size_t>(ranks) - r);
    size_t best = lo;
    for (size_t k = lo; k <= hi; ++k) {
      if (std::abs(static_cast<double>(prefix[k]) - target) <
          std::abs(static_cast<double>(prefix[best]) - target)) {
        best = k;
      }
    }
    bounds[r] = best;
  }
  return bounds;
}

// "exp_avg.12" -> {"exp_avg", 12}; nullopt for a name without a parameter index.
std::optional<std::pair<std::string, size_t>> split_entry(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size()) return std::nullopt;
  size_t index = 0;
  const char* end = name.data() + name.size();
  auto [stop, error] = std::from_chars(name.data() + dot + 1, end, index);
  if (error != std::errc() || stop != end) return std::nullopt;
  return std::make_pair(name.substr(0, dot), index);
}

}  // namespace

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params,
                                                 std::shared_ptr<ProcessGroup> group,
                                                 const Factory& make_optimizer,
                                                 ZeroRedundancyOptions options)
    : Optimizer("ZeroRedundancyOptimizer"), group_(std::move(group)) {
  SG_CHECK(group_ != nullptr, "ZeroRedundancyOptimizer: no process group given");
  SG_CHECK(options.gather_bytes > 0, "ZeroRedundancyOptimizer: gather_bytes must be > 0, got {}",
           options.gather_bytes);
  const int ranks = group_->world_size(), rank = group_->rank();
  SG_CHECK(params.size() >= static_cast<size_t>(ranks),
           "ZeroRedundancyOptimizer: {} parameters cannot be shared by {} ranks (each needs one at "
           "least)",
           params.size(), ranks);
  std::vector<int64_t> prefix{0};
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    SG_CHECK(p.defined() && p.is_contiguous() && p.dtype() == params[0].dtype() &&
                 p.device() == params[0].device(),
             "ZeroRedundancyOptimizer: parameter {} ({}) must be contiguous, of the dtype and on "
             "the device of parameter 0 ({} on {})",
             i, p.defined() ? fmt::format("{} {}", p.dtype(), p.shape()) : "undefined",
             params[0].dtype(), params[0].device().str());
    prefix.push_back(prefix.back() + p.numel());
  }
  bounds_ = balanced_bounds(prefix, ranks);
  for (size_t r = 0; r < static_cast<size_t>(ranks); ++r) {
    shard_numel_ = std::max(shard_numel_, prefix[bounds_[r + 1]] - prefix[bounds_[r]]);
    for (size_t i = bounds_[r]; i < bounds_[r + 1]; ++i)
      offset_.push_back(prefix[i] - prefix[bounds_[r]]);
  }
  const auto [first, count] = shard(rank);
  local_ =
      make_optimizer(std::vector<Tensor>(params.begin() + static_cast<int64_t>(first),
                                         params.begin() + static_cast<int64_t>(first + count)));
  SG_CHECK(local_ != nullptr && local_->num_param_groups() == 1 && local_->params().size() == count,
           "ZeroRedundancyOptimizer: the factory must build an optimizer of one group over the {} "
           "parameters it is given",
           count);
  const TensorOptions like = params[0].options();
  add_group(std::move(params), local_->lr(0), {});  // the lr schedules set, passed on at step()
  const int64_t chunk = std::clamp<int64_t>(
      options.gather_bytes / static_cast<int64_t>(dtype_size(like.dtype())), 1, shard_numel_);
  send_ = zeros({chunk}, like);
  receive_ = zeros({chunk * ranks}, like);
}

std::pair<size_t, size_t> ZeroRedundancyOptimizer::shard(int rank) const {
  SG_CHECK(rank >= 0 && static_cast<size_t>(rank) + 1 < bounds_.size(),
           "ZeroRedundancyOptimizer: no rank {} in a group of {}", rank, bounds_.size() - 1);
  return {bounds_[static_cast<size_t>(rank)],
          bounds_[static_cast<size_t>(rank) + 1] - bounds_[static_cast<size_t>(rank)]};
}

void ZeroRedundancyOptimizer::step() {
  Optimizer::step();  // counts the step (update() leaves the parameters to the shard's optimizer)
  local_->set_lr(lr());
  local_->step();
  all_gather_parameters();
  consolidated_.clear();
  consolidated_on_ = -1;
}

void ZeroRedundancyOptimizer::all_gather_parameters() {
  NoGradGuard no_grad;
  const int ranks = group_->world_size(), me = group_->rank();
  const int64_t chunk = send_.numel();
  // Elements [start, start + len) of rank q's shard (its parameters back to back) to or from
  // `buffer`, from element `at` on.
  auto copy_range = [&](int q, int64_t start, int64_t len, const Tensor& buffer, int64_t at,
                        bool into_parameters) {
    for (size_t i = bounds_[static_cast<size_t>(q)]; i < bounds_[static_cast<size_t>(q) + 1]; ++i) {
      const int64_t off = offset_[i], n = params()[i].numel();
      const int64_t lo = std::max(start, off), hi = std::min(start + len, off + n);
      if (lo >= hi) continue;
      Tensor flat = params()[i].detach().reshape({-1}).narrow(0, lo - off, hi - lo);
      Tensor part = buffer.narrow(0, at + lo - start, hi - lo);
      (into_parameters ? flat : part).copy_(into_parameters ? part : flat);
    }
  };
  for (int64_t start = 0; start < shard_numel_; start += chunk) {
    const int64_t len = std::min(chunk, shard_numel_ - start);
    copy_range(me, start, len, send_, 0, false);
    group_->all_gather_into(receive_, send_);
    for (int q = 0; q < ranks; ++q) {
      if (q != me) copy_range(q, start, len, receive_, q * chunk, true);
    }
  }
}

void ZeroRedundancyOptimizer::consolidate_state(int to) {
  const int ranks = group_->world_size(), me = group_->rank();
  SG_CHECK(to >= 0 && to < ranks, "ZeroRedundancyOptimizer.consolidate_state: no rank {} in {}", to,
           ranks);
  std::map<std::string, Tensor> mine;
  for (auto& [name, t] : local_->state()) mine.emplace(name, t);
  const size_t count = params().size();
  const size_t first = shard(me).first;
  // The step count of every parameter, from its owner (0: never updated, so no state).
  Tensor steps = zeros({static_cast<int64_t>(count)}, kInt64);
  for (size_t i = first; i < first + shard(me).second; ++i) {
    auto it = mine.find(fmt::format("step.{}", i - first));
    if (it != mine.end()) steps.data_ptr<int64_t>()[i] = it->second.item<int64_t>();
  }
  group_->all_reduce(steps, ReduceOp::Sum);
  NamedTensors all;
  all.emplace_back("step", scalar_tensor(static_cast<double>(step_count()), kInt64));
  all.emplace_back("lr", scalar_tensor(lr(), kFloat64));
  all.emplace_back("params", full({1}, static_cast<double>(count), TensorOptions(kInt64)));
  for (size_t i = 0; i < count; ++i) {
    const int64_t step = steps.data_ptr<int64_t>()[i];
    if (step == 0) continue;
    const int owner =
        static_cast<int>(std::upper_bound(bounds_.begin(), bounds_.end(), i) - bounds_.begin() - 1);
    if (me == to) all.emplace_back(fmt::format("step.{}", i), scalar_tensor(step, kInt64));
    // One tensor at a time from its owner: rank `to` alone keeps it (a broadcast reaches every
    // rank; the others drop it at once, so no rank holds more than one extra tensor).
    for (const std::string& name : local_->buffer_names(0)) {
      Tensor t = owner == me ? mine.at(fmt::format("{}.{}", name, i - first))
                             : empty(params()[i].shape(), params()[i].options());
      group_->broadcast(t, owner);
      if (me == to) all.emplace_back(fmt::format("{}.{}", name, i), owner == me ? t.clone() : t);
    }
  }
  consolidated_ = me == to ? std::move(all) : NamedTensors{};
  consolidated_on_ = to;
  consolidated_at_ = step_count();
}

NamedTensors ZeroRedundancyOptimizer::state() const {
  const int me = group_->rank();
  const auto [first, count] = shard(me);
  SG_CHECK(consolidated_on_ == me && consolidated_at_ == step_count(),
           "ZeroRedundancyOptimizer.state: rank {} holds the state of parameters [{}, {}) of {} "
           "only; call consolidate_state() on every rank first, then state() on the rank it names "
           "(0 by default)",
           me, first, first + count, params().size());
  return consolidated_;
}

void ZeroRedundancyOptimizer::load_state(const NamedTensors& state) {
  const int ranks = group_->world_size(), me = group_->rank();
  const auto [first, count] = shard(me);
  const std::vector<std::string>& buffers = local_->buffer_names(0);
  // Every name is checked on every rank (each sees the same entries, so all fail alike); the
  // entries of this rank's parameters go to its shard's optimizer, renumbered from 0.
  NamedTensors own, shard_state;
  for (const auto& [name, t] : state) {
    if (name == "step" || name == "lr") {
      own.emplace_back(name, t);
      shard_state.emplace_back(name, t);
      continue;
    }
    if (name == "params") {  // the whole model's count, checked here; the shard has its own
      own.emplace_back(name, t);
      shard_state.emplace_back(name, full({1}, static_cast<double>(count), TensorOptions(kInt64)));
      continue;
    }
    const auto entry = split_entry(name);
    SG_CHECK(entry && entry->second < params().size() &&
                 (entry->first == "step" ||
                  std::find(buffers.begin(), buffers.end(), entry->first) != buffers.end()),
             "ZeroRedundancyOptimizer.load_state: unexpected entry '{}' (this optimizer has {} "
             "parameters and keeps step and {} per parameter)",
             name, params().size(), fmt::join(buffers, ", "));
    if (entry->second >= first && entry->second < first + count) {
      shard_state.emplace_back(fmt::format("{}.{}", entry->first, entry->second - first), t);
    }
  }
  std::string refused;
  try {
    local_->load_state(shard_state);
  } catch (const Error& e) {
    refused = fmt::format(
        "ZeroRedundancyOptimizer.load_state: rank {} (parameters [{}, {}), numbered from {} "
        "below): {}",
        me, first, first + count, first, e.what());
  }
  // Every rank learns whether every shard loaded, so that all stop together or none does.
  Tensor failed = full({1}, refused.empty() ? 0.0 : 1.0, TensorOptions(kInt64));
  Tensor all_failed = zeros({ranks}, kInt64);
  group_->all_gather_into(all_failed, failed);
  if (!refused.empty()) throw Error(refused);
  for (int q = 0; q < ranks; ++q) {
    SG_CHECK(all_failed.data_ptr<int64_t>()[q] == 0,
             "ZeroRedundancyOptimizer.load_state: rank {}'s shard was refused (its error says "
             "why), so rank {} stops too",
             q, me);
  }
  Optimizer::load_state(own);  // the step count and the lr, already checked by the shard's
  consolidated_.clear();
  consolidated_on_ = -1;
}

int64_t ZeroRedundancyOptimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& [name, t] : local_->state()) {
    if (!is_bookkeeping_entry(name))
      bytes += t.numel() * static_cast<int64_t>(dtype_size(t.dtype()));
  }
  return bytes;
}

int64_t ZeroRedundancyOptimizer::buffer_bytes() const {
  return (send_.numel() + receive_.numel()) * static_cast<int64_t>(dtype_size(send_.dtype()));
}

}  // namespace sg::distributed
