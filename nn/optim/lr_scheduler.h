// Learning-rate schedules. Each is a formula lr_at(step) of the number of optimizer steps taken so
// far, and step() writes lr_at(optimizer.step_count()) into the optimizer: the lr its NEXT step
// will use. The usual loop, as in PyTorch, calls it after each optimizer step:
//
//   sg::optim::Adam opt(model.parameters(), {.lr = 1.0, .betas = {0.9, 0.98}, .eps = 1e-9});
//   sg::optim::NoamLR schedule(opt, /*d_model=*/512, /*warmup=*/4000);   // sets lr for step 1
//   for (...) { ...; opt.step(); schedule.step(); }
//
// A schedule keeps no count of its own: it reads the optimizer's, so restoring an optimizer from
// a checkpoint (Optimizer::load_state) restores its schedule too. Schedules that scale a base lr
// use the optimizer's initial_lr(), the lr it was constructed with.
#pragma once

#include <functional>

#include "nn/optim/optimizer.h"

namespace sg::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {}
  virtual ~LRScheduler() = default;
  // The lr for the update that follows `step` completed steps (step 0: the first update).
  virtual double lr_at(int64_t step) const = 0;
  // Sets the optimizer's lr to lr_at(optimizer.step_count()). Constructors call it once.
  void step() { optimizer_.set_lr(lr_at(optimizer_.step_count())); }
  Optimizer& optimizer() const { return optimizer_; }

 private:
  Optimizer& optimizer_;
};

// "Attention Is All You Need" (5.3), as the Annotated Transformer writes it:
//   lr = factor · d_model^-0.5 · min(s^-0.5, s · warmup^-1.5),  s = max(step, 1)
// a linear rise for `warmup` steps, then decay as 1/√s; the peak is factor / √(d_model · warmup).
// An absolute lr: the optimizer's own lr is replaced, not scaled (construct it with lr = 1).
class NoamLR : public LRScheduler {
 public:
  NoamLR(Optimizer& optimizer, int64_t d_model, int64_t warmup, double factor = 1.0);
  double lr_at(int64_t step) const override;
  int64_t d_model, warmup;
  double factor;
};

// Linear warmup from 0 to the base lr over `warmup` steps, then a half cosine down to min_lr at
// `total` steps (and min_lr after): lr = min_lr + (base - min_lr) · (1 + cos(π · progress)) / 2.
// At step < warmup: base · step / warmup (Hugging Face's get_cosine_schedule_with_warmup).
class WarmupCosineLR : public LRScheduler {
 public:
  WarmupCosineLR(Optimizer& optimizer, int64_t warmup, int64_t total, double min_lr = 0.0);
  double lr_at(int64_t step) const override;
  int64_t warmup, total;
  double min_lr;
};

// torch.optim.lr_scheduler.StepLR: lr = base · gamma^⌊step / step_size⌋.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  double lr_at(int64_t step) const override;
  int64_t step_size;
  double gamma;
};

// torch.optim.lr_scheduler.LambdaLR: lr = base · factor(step), any formula.
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> factor);
  double lr_at(int64_t step) const override;

 private:
  std::function<double(int64_t)> factor_;
};

}  // namespace sg::optim
