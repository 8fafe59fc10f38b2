// Which weights a G2P checkpoint holds, and the mean of several checkpoints of one run.
//
// A checkpoint's "weights" metadata says what its model tensors are: "trained" (the optimizer's
// weights: last.safetensors, and every file of a run without --ema), "ema" (their moving average,
// --ema) or "average" (the mean of step checkpoints, --average-last or `g2p average`, whose
// "averaged_steps" lists the steps). A file written before this entry existed holds "trained".
#pragma once

#include <string>
#include <vector>

#include "run_state.h"

namespace g2p {

// One line for people: "the moving average of the weights (decay 0.999), step 35000".
std::string describe_weights(const sg::nn::Metadata& metadata);

struct AveragedModel {
  Model model;
  sg::nn::Metadata metadata;  // the newest file's, "weights" = "average", "averaged_steps"
  std::vector<int64_t> steps;
};

// The mean of the checkpoints' weights (sg::train::average_checkpoints), as a model: every file
// must be a g2p checkpoint of the same model configuration and vocabularies (an error names the
// file that differs). The metadata is the last path's, so list the newest last.
AveragedModel average_models(const std::vector<std::string>& paths);

// The newest `count` step checkpoints of the run in `dir` (fewer if it has fewer), oldest first.
std::vector<std::string> newest_step_checkpoints(const std::string& dir, int64_t count);

}  // namespace g2p
