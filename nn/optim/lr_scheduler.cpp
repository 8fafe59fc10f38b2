#include "nn/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace sg::optim {

void LRScheduler::step() {
  const int64_t step = optimizer_.step_count();
  std::vector<double> lrs;
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
    lrs.push_back(lr_at(step, optimizer_.initial_lr(g)));
    SG_CHECK(std::isfinite(lrs.back()) && lrs.back() >= 0.0,
             "{}: the lr for step {} of group {} (base lr {}) is {}; a learning rate is finite and "
             "non-negative",
             name_, step, g, optimizer_.initial_lr(g), lrs.back());
  }
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_.set_lr(g, lrs[g]);
}

NoamLR::NoamLR(Optimizer& optimizer, int64_t d_model_, int64_t warmup_, double factor_)
    : LRScheduler(optimizer, "NoamLR"), d_model(d_model_), warmup(warmup_), factor(factor_) {
  SG_CHECK(d_model > 0 && warmup > 0, "NoamLR: d_model and warmup must be positive, got {} and {}",
           d_model, warmup);
  step();
}

double NoamLR::lr_at(int64_t step, double base_lr) const {
  // --8<-- [start:ex12.noam_lr]
  // Step 0 counts as step 1 (0^-0.5 is infinite), so the first two updates share an lr, exactly
  // as the Annotated Transformer's rate() under LambdaLR.
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  return base_lr * factor * std::pow(static_cast<double>(d_model), -0.5) *
         std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(warmup), -1.5));
  // --8<-- [end:ex12.noam_lr]
}

WarmupCosineLR::WarmupCosineLR(Optimizer& optimizer, int64_t warmup_, int64_t total_,
                               double min_lr_)
    : LRScheduler(optimizer, "WarmupCosineLR"), warmup(warmup_), total(total_), min_lr(min_lr_) {
  SG_CHECK(warmup >= 0 && total > warmup,
           "WarmupCosineLR: need 0 <= warmup < total, got warmup {} and total {}", warmup, total);
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) {
    SG_CHECK(min_lr >= 0.0 && min_lr <= optimizer.initial_lr(g),
             "WarmupCosineLR: min_lr must be in [0, base lr {}] (of group {}), got {}",
             optimizer.initial_lr(g), g, min_lr);
  }
  step();
}

double WarmupCosineLR::lr_at(int64_t step, double base) const {
  // --8<-- [start:ex05.warmup_cosine]
  if (step < warmup) return base * static_cast<double>(step) / static_cast<double>(warmup);
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(total - warmup));
  return min_lr + (base - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  // --8<-- [end:ex05.warmup_cosine]
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size_, double gamma_)
    : LRScheduler(optimizer, "StepLR"), step_size(step_size_), gamma(gamma_) {
  SG_CHECK(step_size > 0, "StepLR: step_size must be positive, got {}", step_size);
  SG_CHECK(gamma >= 0.0, "StepLR: gamma must be non-negative, got {}", gamma);
  step();
}

double StepLR::lr_at(int64_t step, double base_lr) const {
  return base_lr * std::pow(gamma, static_cast<double>(step / step_size));
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> factor)
    : LRScheduler(optimizer, "LambdaLR"), factor_(std::move(factor)) {
  SG_CHECK(factor_ != nullptr, "LambdaLR: factor is an empty function");
  step();
}

double LambdaLR::lr_at(int64_t step, double base_lr) const { return base_lr * factor_(step); }

}  // namespace sg::optim
