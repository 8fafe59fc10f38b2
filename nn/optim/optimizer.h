// Optimizer: the base of SGD, Adam and AdamW. It owns the loop every optimizer shares (skip the
// parameters without a gradient, update the rest in place under NoGradGuard, count steps), the
// parameter groups and the per-parameter state (momentum, moment estimates) that checkpoints
// save; a subclass writes only its update rule for one parameter.
//
//   sg::optim::Adam opt(model.parameters(), {.lr = 1e-3});
//   for (...) {
//     opt.zero_grad();
//     sg::nn::cross_entropy(model(x), y).backward();
//     opt.step();
//   }
//
// Parameter groups (torch.optim's param_groups): each group has its own lr and, in the subclass,
// its own options, e.g. no weight decay for biases and LayerNorm weights:
//
//   sg::optim::AdamW opt({{.params = matrices}, {.params = others, .weight_decay = 0.0}},
//                        {.lr = 3e-4, .weight_decay = 0.1});   // the second argument: defaults
//
// Schedules (lr_scheduler.h) set every group's lr from that group's initial lr.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nn/module.h"

namespace sg::optim {

// The most steps an optimizer (or a moving average) counts: 2^53, the largest count a double
// holds exactly. Bias corrections, schedules and checkpoints (scalar_tensor) compute the count in
// double; a larger one, from a damaged or hostile checkpoint, would overflow or round and change
// the learning rate without a word. Loading refuses it, and step() refuses to pass it.
inline constexpr int64_t kMaxStepCount = int64_t{1} << 53;

using nn::NamedTensors;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient; parameters without one are skipped and keep
  // their state (as in PyTorch, their per-parameter step count does not advance). Inside a CUDA
  // graph capture (autograd/cuda_graph.h) it records the updates, and each replay counts the
  // step, as an eager step() would, before the kernels run.
  virtual void step();
  // Clears every parameter's gradient (sets it undefined: PyTorch's set_to_none).
  void zero_grad();

  // ---- parameter groups ----
  size_t num_param_groups() const { return groups_.size(); }
  // Every group's parameters, group after group: parameter i of state() is params()[i].
  const std::vector<Tensor>& params() const { return params_; }
  std::vector<Tensor> group_params(size_t group) const;
  double lr(size_t group = 0) const;
  void set_lr(double lr);  // every group's
  void set_lr(size_t group, double lr);
  // The lr a group was created with: schedules scale it.
  double initial_lr(size_t group = 0) const;
  int64_t step_count() const { return step_count_; }  // calls of step() so far
  // The state tensors a group's update keeps per parameter ("exp_avg", "exp_avg_sq"; none for SGD
  // without momentum).
  const std::vector<std::string>& buffer_names(size_t group = 0) const;
  const std::string& name() const { return name_; }

  // ---- state, for checkpoints ----
  // "step" (int64 []), "lr" (float64: [] with one group, [G] with G groups), "params" (int64 [G],
  // each group's parameter count) and, for each parameter i updated at least once, "step.i" (int64
  // [], its own update count, >= 1) and
  // "<buffer>.i" for each buffer of its group ("exp_avg.0"). Buffers are the live tensors (no
  // copy): write them out before the next step(). The other options of each group are not state:
  // they come from the constructor, so load into an optimizer built with the same groups.
  virtual NamedTensors state() const;
  // Restores what state() returned, after checking it all first (nothing changes on an error):
  // step counts are int64 (a parameter's at least 1 and at most the optimizer's), the lrs
  // float32 or float64, finite and non-negative, one per group; the groups' parameter counts
  // those of this optimizer (a state without "params", from before it was saved, is not
  // checked); every entry of a parameter with "step.i" is present, its shape that of the
  // parameter; no unknown names. Values are copied into fresh tensors of the parameter's dtype and
  // device.
  virtual void load_state(const NamedTensors& state);
  // Whether a state() entry is a count or a rate ("step", "lr", "params", "step.i"), not a tensor
  // kept per parameter.
  static bool is_bookkeeping_entry(const std::string& name);

 protected:
  // `name` ("Adam") starts error messages.
  explicit Optimizer(std::string name);
  // Appends a group of parameters (checked: floating point leaves, none already in a group) with
  // its lr and `buffer_names`, the per-parameter state tensors its update keeps ("exp_avg",
  // "exp_avg_sq"), created as zeros at a parameter's first update.
  void add_group(std::vector<Tensor> params, double lr, std::vector<std::string> buffer_names);
  // Updates parameter i (in place) from its gradient. Runs under NoGradGuard, after
  // param_step(i) was incremented: it is 1 at the parameter's first update.
  virtual void update(size_t i, Tensor& param, const Tensor& grad) = 0;
  // Updates the parameters `updated` (those with a gradient, in order), each after its
  // param_step was incremented: update() on each, unless a subclass updates them together (Adam's
  // multi-tensor step).
  virtual void update_all(const std::vector<size_t>& updated);
  // Parameter i's state tensor `name` (one of its group's buffer_names), zeros like the parameter.
  Tensor& buffer(const std::string& name, size_t i);
  int64_t param_step(size_t i) const { return param_steps_[i]; }
  size_t group_of(size_t i) const { return group_of_[i]; }
  // CUDA graphs: record the updates of the parameters `updated` (each has state already) so that
  // they read from the device what changes between steps (the lr, the step count); the default
  // refuses, naming the optimizer. before_replay puts those values on the device before each
  // replay, param_step(i) already counting the replayed step.
  virtual void capture_updates(const std::vector<size_t>& updated);
  virtual void before_replay(const std::vector<size_t>& /*updated*/) {}

 private:
  struct Group {
    double lr, initial_lr;
    std::vector<std::string> buffer_names;
  };
  void check_group(size_t group) const;
  void step_in_capture();
  void check_lr(double lr) const;

  std::string name_;
  std::vector<Tensor> params_;
  std::vector<Group> groups_;
  std::vector<size_t> group_of_;  // parameter -> its group
  int64_t step_count_ = 0;
  std::vector<int64_t> param_steps_;                    // PyTorch's state[p]["step"]
  std::map<std::string, std::vector<Tensor>> buffers_;  // name -> one per parameter, or undefined
};

}  // namespace sg::optim
