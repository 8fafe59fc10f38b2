// Learning-rate schedules. Each is a formula lr_at(step, base_lr) of the number of optimizer steps
// taken so far and a parameter group's base lr (its initial_lr(), the lr it was created with), as
// PyTorch's schedulers scale each group's base lr; step() writes every group's lr_at into the
// optimizer: the lr its NEXT step will use. The usual loop, as in PyTorch, calls it after each
// optimizer step:
//
//   sg::optim::Adam opt(model.parameters(), {.lr = 1.0, .betas = {0.9, 0.98}, .eps = 1e-9});
//   sg::optim::NoamLR schedule(opt, /*d_model=*/512, /*warmup=*/4000);   // sets lr for step 1
//   for (...) { ...; opt.step(); schedule.step(); }
//
// A schedule keeps no count of its own: it reads the optimizer's, so restoring an optimizer from
// a checkpoint (Optimizer::load_state) restores its schedule too.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "nn/optim/optimizer.h"

namespace sg::optim {

class LRScheduler {
 public:
  // `name` ("NoamLR") starts error messages.
  LRScheduler(Optimizer& optimizer, std::string name)
      : optimizer_(optimizer), name_(std::move(name)) {}
  virtual ~LRScheduler() = default;
  // The lr for the update that follows `step` completed steps (step 0: the first update), of a
  // group whose base lr is base_lr.
  virtual double lr_at(int64_t step, double base_lr) const = 0;
  // The same for the first group's base lr.
  double lr_at(int64_t step) const { return lr_at(step, optimizer_.initial_lr(0)); }
  // Sets each group's lr to lr_at(optimizer.step_count(), its initial lr). Constructors call it.
  // An lr that is not finite and non-negative (a factor that overflows, a lambda's NaN) is an
  // error naming the scheduler, the step and the group, and no group's lr changes.
  void step();
  Optimizer& optimizer() const { return optimizer_; }

 private:
  Optimizer& optimizer_;
  std::string name_;
};

// "Attention Is All You Need" (5.3), as the Annotated Transformer writes it:
//   lr = factor · d_model^-0.5 · min(s^-0.5, s · warmup^-1.5),  s = max(step, 1)
// a linear rise for `warmup` steps, then decay as 1/√s; the peak is factor / √(d_model · warmup).
// It scales the base lr, as LambdaLR(rate) does in the Annotated Transformer: construct the
// optimizer with lr = 1 for the paper's values.
class NoamLR : public LRScheduler {
 public:
  NoamLR(Optimizer& optimizer, int64_t d_model, int64_t warmup, double factor = 1.0);
  using LRScheduler::lr_at;
  double lr_at(int64_t step, double base_lr) const override;
  int64_t d_model, warmup;
  double factor;
};

// Linear warmup from 0 to the base lr over `warmup` steps, then a half cosine down to min_lr at
// `total` steps (and min_lr after): lr = min_lr + (base - min_lr) · (1 + cos(π · progress)) / 2.
// At step < warmup: base · step / warmup (Hugging Face's get_cosine_schedule_with_warmup).
// min_lr is the same for every group, at most the smallest base lr.
class WarmupCosineLR : public LRScheduler {
 public:
  WarmupCosineLR(Optimizer& optimizer, int64_t warmup, int64_t total, double min_lr = 0.0);
  using LRScheduler::lr_at;
  double lr_at(int64_t step, double base_lr) const override;
  int64_t warmup, total;
  double min_lr;
};

// torch.optim.lr_scheduler.StepLR: lr = base · gamma^⌊step / step_size⌋.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  using LRScheduler::lr_at;
  double lr_at(int64_t step, double base_lr) const override;
  int64_t step_size;
  double gamma;
};

// torch.optim.lr_scheduler.LambdaLR: lr = base · factor(step), any formula.
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> factor);
  using LRScheduler::lr_at;
  double lr_at(int64_t step, double base_lr) const override;

 private:
  std::function<double(int64_t)> factor_;
};

}  // namespace sg::optim
