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

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "train/checkpoint.h"

namespace sg::train {

// `each_file`, when given, sees every file as it is read (its metadata, to check it is of the
// same model), before its tensors are added.
nn::NamedTensors average_checkpoints(
    const std::vector<std::string>& paths,
    const std::function<void(const Checkpoint& file)>& each_file = nullptr);

// The mean as a checkpoint file of its own, what a program's `average` command writes: the
// checkpoints named, or the newest `last` step checkpoints of the run in `run_dir`.
struct AverageRequest {
  std::vector<std::string> paths;  // newest last
  std::string run_dir;             // or this run's step checkpoints
  int64_t last = 5;
  std::string out;
  bool overwrite = false;
};
// Writes the mean to request.out with the newest (last) file's metadata, "weights" = "average"
// and "averaged_steps" (each file's "step"), and returns that metadata. `check_file`, when given,
// sees each file first (the program's own reading of its checkpoints), and every key of
// `must_agree` (the format, the model's configuration, its vocabularies) must be the same in
// every file, or the error names the key and the two files. As a run never overwrites a run,
// `out` is replaced only with `overwrite` (it may be a run's model.safetensors, or the
// last.safetensors a resume needs), and may not be one of the files averaged.
nn::Metadata save_average(const AverageRequest& request, const std::vector<std::string>& must_agree,
                          const std::function<void(const Checkpoint& file)>& check_file = nullptr);

}  // namespace sg::train
