// The training loop's own options, declared once for every program that trains with it: how long
// a run is, how often it is evaluated and checkpointed, and which weights it evaluates and keeps.
// A program's Config holds one and adds its options to its schema (option_schema.h), so --steps
// has the same flag, bounds, help and rule on --resume in every program, and the Trainer gets
// them in one call:
//
//   struct Config {
//     int64_t layers = 2;
//     sg::train::LoopConfig loop{.steps = 3000, .eval_every = 500};
//     sg::train::OptionSchema schema() {
//       sg::train::OptionSchema s;
//       s.integer("layers", layers, 1, 64, OnResume::kFixedModel, "Transformer blocks");
//       loop.add_to(s);   // --steps, --eval-every, --checkpoint-every
//       return s;
//     }
//   };
//   sg::train::TrainerOptions options;  config.loop.apply_to(options);
#pragma once

#include <cstdint>

#include "train/option_schema.h"
#include "train/trainer.h"

namespace sg::train {

// What a program offers beyond --steps and the two cadences.
struct OfferedLoopOptions {
  bool moving_average = false;        // --ema
  bool checkpoint_averaging = false;  // --average-last
};

struct LoopConfig {
  int64_t steps = 1000;
  int64_t eval_every = 100;      // and at the last step
  int64_t checkpoint_every = 0;  // last.safetensors every so many steps (0: at the end only)
  // Offered by a program that asks for them (OfferedLoopOptions): a moving average of the weights
  // with this decay, evaluated and saved instead of them (0: none), and the mean of the newest this
  // many step checkpoints, evaluated at the end (0: none).
  double ema = 0;
  int64_t average_last = 0;

  // Adds --steps, --eval-every and --checkpoint-every (and what `offered` names) to `schema`:
  // each may change on --resume but the moving average, whose value so far depends on every step.
  void add_to(OptionSchema& schema, OfferedLoopOptions offered = {});
  // What no single bound catches: the moving average's decay below 1, and averaging only with
  // step checkpoints to average.
  void check() const;
  // The Trainer's steps, eval_every, checkpoint_every, average_last and ema_decay.
  void apply_to(TrainerOptions& options) const;

  static constexpr int64_t kMaxSteps = 1'000'000'000, kMaxAverageLast = 1000;
};

}  // namespace sg::train
