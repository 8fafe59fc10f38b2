// The training loop's part of a checkpoint's metadata (sg::train::Trainer writes it): the step,
// the best evaluation and which weights the file holds. For a program that reads a run's files,
// e.g. model.safetensors's "best_step" and "best_metrics" (the evaluation that chose it).
//
//   sg::train::SavedRunState s = sg::train::saved_run_state(file.metadata, path);
//   fmt::print("{} weights, step {}, best {}", s.weights, s.step, s.best.at("dev_wer"));
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/safetensors.h"
#include "train/metadata.h"

namespace sg::train {

// An evaluation's numbers by name ({"exact_match": 0.98, "token_accuracy": 0.99}).
using Metrics = std::map<std::string, double>;

struct SavedRunState {
  int64_t step = 0;
  int64_t best_step = 0;  // 0: no evaluation yet
  Metrics best;
  std::string weights;  // "trained", "ema" (the moving average) or "average"
  std::vector<int64_t> averaged_steps;
};
SavedRunState saved_run_state(const nn::Metadata& metadata, const std::string& source);

// Marks metadata as the mean of the checkpoints of these steps: "weights" = "average" and
// "averaged_steps" = "[40, 50]", as saved_run_state reads them back.
void mark_as_average(nn::Metadata& metadata, const std::vector<int64_t>& steps);

// Which weights a checkpoint holds, in one line for people: "the moving average of the weights
// (decay 0.999), step 35000", "the mean of the weights at steps [40, 50]", "the trained weights,
// step 60". A file written before "weights" existed holds the trained weights.
std::string describe_weights(const nn::Metadata& metadata);

// Metrics as metadata: a JSON object of numbers (a non-finite one as null, read back as NaN).
std::string metrics_to_json(const Metrics& metrics);
Metrics metrics_from_json(const MetadataReader& md, const std::string& key);

}  // namespace sg::train
