// A copy-task run's state on disk, apart from the training loop (trainer.cpp): what --resume
// restores besides the weights and the optimizer (RunState, kept in the checkpoint's metadata
// with the config), and reading a checkpoint back, checked. The run directory, the one-file
// checkpoint and the metadata codec are the library's (train/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "nn/nn.h"
#include "train/checkpoint.h"
#include "train/data_parallel_run.h"
#include "train/history.h"
#include "train/run_directory.h"

namespace copy_task {

// Everything --resume needs besides the weights and the optimizer. The history's evaluations
// hold "exact" (exact match) and "token_acc" (token accuracy).
struct RunState {
  int64_t step = 0;
  uint64_t data_rng = 0, eval_rng = 0;
  // The dropout generator (with --distributed, each rank's, in rank order).
  sg::train::DropoutStreams dropout;
  double best_exact = -1;
  int64_t best_step = 0;
  std::optional<int64_t> first_perfect;
  sg::train::History history;
  bool bf16 = false;  // the steps ran under bfloat16 autocast (--bf16): kept on --resume
};

// The checkpoint metadata of a run: its config and its state.
sg::nn::Metadata metadata_for(const Config& config, const RunState& state);

// A copy-task checkpoint: its config, parsed strictly and checked against the tensors the file
// holds before any model is built, and the file's contents.
struct CheckpointFile {
  Config config;
  sg::train::Checkpoint checkpoint;
};
CheckpointFile read_checkpoint(const std::string& path);

// Restores the model, the optimizer and the run's state from the run's last.safetensors, after
// checking that `config` is the checkpoint's (only the flags Config::fields() lets change may)
// and that the run is resumed in its precision (`bf16`).
RunState resume_from(const sg::train::RunDirectory& run, const Config& config, bool bf16,
                     sg::nn::Transformer& model, sg::optim::Optimizer& optimizer);

}  // namespace copy_task
