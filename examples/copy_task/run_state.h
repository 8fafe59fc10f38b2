// A copy-task checkpoint, apart from the training loop (trainer.cpp): the task's metadata (its
// format and config; the loop adds its own keys, and the task its data streams), and reading a
// checkpoint back, checked. The run directory, the one-file checkpoint and the metadata codec are
// the library's (train/).
#pragma once

#include <string>

#include "config.h"
#include "nn/nn.h"
#include "train/checkpoint.h"

namespace copy_task {

// The metadata every copy-task checkpoint starts from: its format and its config.
sg::nn::Metadata metadata_for(const Config& config);

// A checkpoint's config, parsed strictly and checked against the tensors the file holds before
// any model is built (layers=1000000000 is refused there), then bounded.
Config config_of(const sg::train::Checkpoint& checkpoint);

// A copy-task checkpoint: its config and the file's contents.
struct CheckpointFile {
  Config config;
  sg::train::Checkpoint checkpoint;
};
CheckpointFile read_checkpoint(const std::string& path);

}  // namespace copy_task
