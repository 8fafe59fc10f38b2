#include "train/loop_config.h"

namespace sg::train {

void LoopConfig::add_to(OptionSchema& schema, OfferedLoopOptions offered) {
  schema
      .integer("steps", steps, 1, kMaxSteps, OnResume::kMayChange,
               "training steps (may grow on --resume)")
      .integer("eval_every", eval_every, 1, kMaxSteps, OnResume::kMayChange,
               "steps between held-out evaluations")
      .integer("checkpoint_every", checkpoint_every, 0, kMaxSteps, OnResume::kMayChange,
               "steps between checkpoints (0 = at the end only)");
  if (offered.moving_average) {
    // The average so far depends on every step: it cannot start or change halfway.
    schema
        .real("ema", ema, 0, 1, OnResume::kFixed,
              "keep a moving average of the weights with this decay (e.g. 0.999) and evaluate "
              "and save it instead of them (0 = none)")
        .before_it_existed("0");
  }
  if (offered.checkpoint_averaging) {
    // Only what is kept and averaged at the end: the newest K step checkpoints there are.
    schema
        .integer("average_last", average_last, 0, kMaxAverageLast, OnResume::kMayChange,
                 "save the model every --checkpoint-every steps, keep the newest K, and at the "
                 "end evaluate their mean (0 = none)")
        .before_it_existed("0");
  }
}

void LoopConfig::check() const {
  TrainerOptions::check_moving_average(ema);
  TrainerOptions::check_checkpoint_averaging(average_last, checkpoint_every);
}

void LoopConfig::apply_to(TrainerOptions& options) const {
  options.steps = steps;
  options.eval_every = eval_every;
  options.checkpoint_every = checkpoint_every;
  options.average_last = average_last;
  options.ema_decay = ema;
}

}  // namespace sg::train
