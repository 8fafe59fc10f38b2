// Optimizer: the base of SGD, Adam and AdamW. It owns the loop every optimizer shares (skip the
// parameters without a gradient, update the rest in place under NoGradGuard, count steps) and the
// per-parameter state (momentum, moment estimates) that checkpoints save; a subclass writes only
// its update rule for one parameter.
//
//   sg::optim::Adam opt(model.parameters(), {.lr = 1e-3});
//   for (...) {
//     opt.zero_grad();
//     sg::nn::cross_entropy(model(x), y).backward();
//     opt.step();
//   }
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nn/module.h"

namespace sg::optim {

using nn::NamedTensors;

class Optimizer {
 public:
  // `name` ("Adam") starts error messages; `buffer_names` are the per-parameter state tensors the
  // update keeps ("exp_avg", "exp_avg_sq"), created as zeros at a parameter's first update.
  Optimizer(std::string name, std::vector<Tensor> params, double lr,
            std::vector<std::string> buffer_names);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient; parameters without one are skipped and keep
  // their state (as in PyTorch, their per-parameter step count does not advance).
  virtual void step();
  // Clears every parameter's gradient (sets it undefined: PyTorch's set_to_none).
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);  // what LR schedules call before each step
  double initial_lr() const {
    return initial_lr_;
  }  // the lr given at construction: schedules scale it
  int64_t step_count() const { return step_count_; }  // calls of step() so far
  const std::vector<Tensor>& params() const { return params_; }
  const std::string& name() const { return name_; }

  // ---- state, for checkpoints ----
  // "step" (int64 []), "lr" (float64 []) and, for each parameter i updated at least once,
  // "step.i" (int64 [], its own update count) and "<buffer>.i" for each buffer ("exp_avg.0").
  // Buffers are the live tensors (no copy): write them out before the next step().
  virtual NamedTensors state() const;
  // Restores what state() returned, after checking it all first (nothing changes on an error):
  // every entry of a parameter with "step.i" present, shapes equal to the parameter's, no
  // unknown names. Values are copied into fresh tensors of the parameter's dtype and device.
  virtual void load_state(const NamedTensors& state);

 protected:
  // Updates parameter i (in place) from its gradient. Runs under NoGradGuard, after
  // param_step(i) was incremented: it is 1 at the parameter's first update.
  virtual void update(size_t i, Tensor& param, const Tensor& grad) = 0;
  // Parameter i's state tensor `name` (one of buffer_names), zeros like the parameter.
  Tensor& buffer(const std::string& name, size_t i);
  int64_t param_step(size_t i) const { return param_steps_[i]; }

 private:
  std::string name_;
  std::vector<Tensor> params_;
  double lr_, initial_lr_;
  int64_t step_count_ = 0;
  std::vector<int64_t> param_steps_;                    // PyTorch's state[p]["step"]
  std::map<std::string, std::vector<Tensor>> buffers_;  // name -> one per parameter, or undefined
};

}  // namespace sg::optim
