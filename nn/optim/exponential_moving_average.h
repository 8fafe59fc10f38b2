// An exponential moving average of a module's weights (Polyak averaging): a second copy of every
// parameter and buffer that follows the trained ones slowly. Updated after each optimizer step,
//   average = decay · average + (1 - decay) · current      (written average += (1 - decay) ·
//   (current - average))
// it smooths out the noise of the last steps; evaluated in place of the trained weights it is
// often better than them, for free. The names and rules are those of torch_ema's
// ExponentialMovingAverage (and TensorFlow's tf.train.ExponentialMovingAverage); the average is
// what torch.optim.swa_utils.AveragedModel(model, avg_fn=<the same rule>, use_buffers=True)
// computes when its first update_parameters() is called at construction.
//
//   sg::optim::ExponentialMovingAverage ema(model, {.decay = 0.999});   // starts as a copy
//   for (...) { ...; optimizer.step(); ema.update(model); }
//   ema.swap(model);  evaluate(model);  ema.swap(model);   // evaluate the average, train on
//   ema.copy_to(model);                                     // or keep the average for good
//
// With use_num_updates (the default, as in torch_ema), update k (k = 1, 2, ...) uses
//   min(decay, (1 + k) / (10 + k))
// so the first updates move fast (0.18, 0.25, 0.31, ...) and the random initial weights are
// forgotten: without it, a decay of 0.999 still gives them a weight of 0.999^3000 = 5% after 3000
// steps. Floating tensors are averaged, the others (step counters) copied.
//
// The average lives on the module's device, in its dtype. state() and load_state() carry it in a
// checkpoint (sg::train::save_checkpoint stores it under "ema."), so a resumed run continues the
// same average to the bit.
#pragma once

#include <cstdint>

#include "nn/module.h"

namespace sg::optim {

struct ExponentialMovingAverageOptions {
  double decay = 0.999;  // in [0, 1]: 0 follows the weights, 1 never moves
  bool use_num_updates = true;
};

class ExponentialMovingAverage {
 public:
  // The average starts as a copy of module.state_dict(): parameters and buffers.
  explicit ExponentialMovingAverage(const nn::Module& module,
                                    ExponentialMovingAverageOptions options = {});

  // One step of the average towards the module's current weights. The module must have the
  // names and shapes it was built from.
  void update(const nn::Module& module);
  // Writes the average into the module's parameters and buffers (in place: handles stay valid).
  void copy_to(nn::Module& module) const;
  // Exchanges the module's weights with the average, bit for bit: a second swap undoes the first.
  void swap(nn::Module& module);

  // The decay that update number k (1, 2, ...) uses.
  double decay_at(int64_t k) const;
  int64_t num_updates() const { return num_updates_; }
  const ExponentialMovingAverageOptions& options() const { return options_; }
  // The average of each entry of the module's state_dict, by its name (live tensors, no copy).
  const nn::NamedTensors& averaged() const { return averaged_; }

  // ---- state, for checkpoints ----
  // "num_updates" (int64 []), "decay" (float64 []) and "shadow.<name>" for each averaged tensor.
  nn::NamedTensors state() const;
  // Restores what state() returned, after checking all of it (nothing changes on an error): the
  // same decay as this average's, every "shadow.<name>" present with its shape and a floating
  // dtype where the average is floating, no unknown entries.
  void load_state(const nn::NamedTensors& state);

 private:
  // The module's state_dict, checked against the average's names and shapes; `op` starts errors.
  nn::NamedTensors matching_state(const char* op, const nn::Module& module) const;

  ExponentialMovingAverageOptions options_;
  nn::NamedTensors averaged_;
  int64_t num_updates_ = 0;
};

}  // namespace sg::optim
