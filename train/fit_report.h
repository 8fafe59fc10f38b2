// What a finished fit says: a few lines for people, and one JSON object for scripts
// (--metrics-json), the same for every task.
//
//   const sg::train::FitResult r = trainer.fit(task);
//   fmt::print("{}", r.summary);   // fit_summary, which the Trainer fills in
//   // trained 40 steps in 1.2 s (28.1 ms/step median); loss 3.412 -> 1.870
//   // best, at step 40: dev WER 50.00%  PER 21.05% (20 words)
//   // mean of the checkpoints at steps 30, 40: dev WER 45.00%  PER 19.30% (20 words)
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "train/trainer.h"

namespace sg::train {

// Steps, time and loss; the best evaluation (or that there is none yet); the mean of the last
// checkpoints, with average_last; with several ranks, the gradients' traffic and each rank's
// optimizer state. Each evaluation in the task's words (TrainingTask::describe).
// The Trainer puts it in FitResult::summary.
std::string fit_summary(const FitResult& result, const TrainingTask& task,
                        const TrainerOptions& options);

// {"config": the task's configuration (its checkpoint metadata's "config." keys), "steps",
//  "world_size" (the ranks that trained), "gradient_bytes_per_step" (all-reduced by each rank),
//  "optimizer_state_bytes_per_rank",
//  "train_seconds", "median_ms_per_step", "first_loss", "final_loss", "precision",
//  "evaluated_weights" ("ema" or "trained"), "best_step", "best": {metric: value},
//  "averaged_steps" and "averaged" (with average_last), "evals": [{"step", each metric,
//  "train_seconds"}]}. What the Trainer writes to options.metrics_json.
nlohmann::json fit_result_json(const FitResult& result, const TrainingTask& task,
                               const TrainerOptions& options);

}  // namespace sg::train
