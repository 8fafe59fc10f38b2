// A G2P run's state on disk, apart from the training loop (trainer.cpp): what --resume restores
// besides the weights and the optimizer (RunState, in the checkpoint's metadata with the config
// and the vocabularies), and reading a checkpoint back, checked. The run directory, the one-file
// checkpoint and the metadata codec are the library's (nn/train/).
#pragma once

#include <cstdint>
#include <string>

#include "nn/train/checkpoint.h"
#include "nn/train/history.h"
#include "trainer.h"

namespace g2p {

// Everything --resume needs besides the weights and the optimizer. The history's evaluations
// hold "dev_wer", "dev_per" and "eval_seconds" (wall seconds of training when each was taken:
// the time to reach a dev WER); its total "seconds" is the training time at the last save.
struct RunState {
  int64_t step = 0;
  sg::data::LoaderPosition loader;
  uint64_t global_rng = 0;
  double best_wer = 2.0;
  int64_t best_step = 0;
  double best_per = 0;
  int64_t train_pairs = 0;  // the loader's examples: a resume on other data is refused
  sg::train::History history;
};

// The checkpoint metadata of a run: its config, vocabularies and state.
sg::nn::Metadata metadata_for(const Model& m, const RunState& s);

// A checkpoint's contents: the model built and loaded, the run's state, and the file (its
// optimizer state; none in model.safetensors).
struct CheckpointFile {
  Model model;
  RunState state;
  sg::train::Checkpoint checkpoint;
};

// Checks a checkpoint's metadata (every value parsed strictly, the config's sizes against the
// tensors the file holds), then builds its model and loads it.
CheckpointFile read_checkpoint(sg::train::Checkpoint checkpoint);
CheckpointFile read_checkpoint(const std::string& path);

}  // namespace g2p
