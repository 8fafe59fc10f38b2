// Checkpoint averaging: the element-wise mean of the weights a run saved at its last few
// checkpoints. Near the end of training the weights wander around a minimum with the noise of
// the last batches; their mean sits closer to it, and often scores better than any one of them
// (Vaswani et al. 2017 average the last 5 or 20 checkpoints). The rules are those of fairseq's
// scripts/average_checkpoints.py:
//
//   sg::nn::NamedTensors mean = sg::train::average_checkpoints(
//       {"run/checkpoint-9000.safetensors", "run/checkpoint-10000.safetensors"});
//   sg::nn::load(model, mean, "the average");   // a model of the same config
//
// Every file is read and checked as read_checkpoint checks it (a valid file; no NaN or infinity
// in the model's tensors), and only the model's tensors are averaged (not "optimizer." or "ema."
// entries). The files must hold the same names, shapes and dtypes (an error names the file and
// the tensor). Floating tensors are summed in float64 and divided by the number of files, then
// converted back to their dtype; int64 tensors (counters) get fairseq's floor of the mean; bool
// tensors must be equal in every file. The result lists the tensors in the first file's order.
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"

namespace sg::train {

nn::NamedTensors average_checkpoints(const std::vector<std::string>& paths);

}  // namespace sg::train
