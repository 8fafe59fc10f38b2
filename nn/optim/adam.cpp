#include "nn/optim/adam.h"

#include "autograd/backend/adam_step_scalars.h"
#include "autograd/backend/backend.h"
#include "autograd/cuda_graph.h"

namespace sg::optim {

namespace {

std::vector<std::string> adam_buffers(const AdamOptions& o) {
  if (o.amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

AdamOptions adam_options(const AdamWOptions& o) {
  return {.lr = o.lr,
          .betas = o.betas,
          .eps = o.eps,
          .weight_decay = o.weight_decay,
          .amsgrad = o.amsgrad};
}

}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam("Adam", {{.params = std::move(params)}}, options, /*decoupled=*/false) {}

Adam::Adam(std::vector<AdamParamGroup> groups, AdamOptions defaults)
    : Adam("Adam", std::move(groups), defaults, /*decoupled=*/false) {}

Adam::Adam(std::string name, std::vector<AdamParamGroup> groups, AdamOptions defaults,
           bool decoupled)
    : Optimizer(std::move(name)), defaults_(defaults), decoupled_weight_decay_(decoupled) {
  SG_CHECK(!groups.empty(), "{}: got an empty parameter list", this->name());
  for (const AdamParamGroup& group : groups) add_param_group(group);
}

void Adam::add_param_group(const AdamParamGroup& group) {
  AdamOptions o = defaults_;
  o.lr = group.lr.value_or(o.lr);
  o.betas = group.betas.value_or(o.betas);
  o.eps = group.eps.value_or(o.eps);
  o.weight_decay = group.weight_decay.value_or(o.weight_decay);
  o.amsgrad = group.amsgrad.value_or(o.amsgrad);
  const auto [beta1, beta2] = o.betas;
  SG_CHECK(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0,
           "{}: betas must be in [0, 1), got ({}, {})", name(), beta1, beta2);
  SG_CHECK(o.eps >= 0.0, "{}: eps must be non-negative, got {}", name(), o.eps);
  SG_CHECK(o.weight_decay >= 0.0, "{}: weight_decay must be non-negative, got {}", name(),
           o.weight_decay);
  add_group(group.params, o.lr, adam_buffers(o));
  group_options_.push_back(o);
}

const AdamOptions& Adam::options(size_t group) const {
  SG_CHECK(group < group_options_.size(), "{}: no parameter group {} (it has {})", name(), group,
           group_options_.size());
  return group_options_[group];
}

void Adam::update(size_t i, Tensor& param, const Tensor& grad) {
  const AdamOptions& o = group_options_[group_of(i)];
  const auto [beta1, beta2] = o.betas;
  // The update in one op (ops/inplace.cpp): fused where the backend has the kernel, and with the
  // running maximum of the second moment for AMSGrad.
  adam_update_(param, grad, buffer("exp_avg", i), buffer("exp_avg_sq", i), lr(group_of(i)), beta1,
               beta2, o.eps, o.weight_decay, decoupled_weight_decay_, param_step(i),
               o.amsgrad ? buffer("max_exp_avg_sq", i) : Tensor());
}

void Adam::update_all(const std::vector<size_t>& updated) {
  std::vector<std::vector<AdamParameter>> by_group(group_options_.size());
  for (const size_t i : updated) {
    const size_t group = group_of(i);
    Tensor param = params()[i];
    if (group_options_[group].amsgrad || param.device() != params()[updated.front()].device()) {
      update(i, param, param.grad());
    } else {
      by_group[group].push_back(
          {param, param.grad(), buffer("exp_avg", i), buffer("exp_avg_sq", i), param_step(i)});
    }
  }
  for (size_t group = 0; group < by_group.size(); ++group) {
    const AdamOptions& o = group_options_[group];
    adam_update_foreach_(by_group[group], lr(group), o.betas.first, o.betas.second, o.eps,
                         o.weight_decay, decoupled_weight_decay_);
  }
}

void Adam::capture_updates(const std::vector<size_t>& updated) {
  for (const size_t i : updated) {
    SG_CHECK(!group_options_[group_of(i)].amsgrad,
             "{}: amsgrad cannot be captured in a CUDA graph (its update is several ops with the "
             "lr as a host number); capture without it",
             name());
  }
  const Device device = params()[updated.front()].device();
  // Made in the capture, in memory no kernel of the graph writes: each replay's values are put
  // there before it runs.
  const cuda::ReplayInputScope written_before_each_replay;
  graph_step_scalars_ =
      empty({static_cast<int64_t>(params().size()), 3}, TensorOptions(kFloat64).device(device));
  // One update per group (its betas, eps and decay), each over all of the group's parameters.
  std::vector<std::vector<AdamParameter>> by_group(group_options_.size());
  for (const size_t i : updated) {
    Tensor param = params()[i];
    by_group[group_of(i)].push_back(
        {.param = param,
         .grad = param.grad(),
         .exp_avg = buffer("exp_avg", i),
         .exp_avg_sq = buffer("exp_avg_sq", i),
         .step_scalars = graph_step_scalars_.select(0, static_cast<int64_t>(i))});
  }
  for (size_t group = 0; group < by_group.size(); ++group) {
    if (by_group[group].empty()) continue;
    const AdamOptions& o = group_options_[group];
    adam_update_foreach_(by_group[group], lr(group), o.betas.first, o.betas.second, o.eps,
                         o.weight_decay, decoupled_weight_decay_);
  }
}

void Adam::before_replay(const std::vector<size_t>& updated) {
  std::vector<double> table(params().size() * 3, 0.0);
  for (const size_t i : updated) {
    const AdamOptions& o = group_options_[group_of(i)];
    const AdamStepScalars s = adam_step_scalars(lr(group_of(i)), o.betas.first, o.betas.second,
                                                o.weight_decay, param_step(i));
    table[3 * i] = s.step_size;
    table[3 * i + 1] = s.sqrt_bias_correction2;
    table[3 * i + 2] = s.decay;
  }
  backend_for(graph_step_scalars_.device())
      .copy_from_host(graph_step_scalars_.raw_data(), table.data(), table.size() * sizeof(double));
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions o)
    : Adam("AdamW", {{.params = std::move(params)}}, adam_options(o), /*decoupled=*/true) {}

AdamW::AdamW(std::vector<AdamParamGroup> groups, AdamWOptions defaults)
    : Adam("AdamW", std::move(groups), adam_options(defaults), /*decoupled=*/true) {}

}  // namespace sg::optim
