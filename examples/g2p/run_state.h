// What a G2P checkpoint holds besides what the training loop keeps (sg::train::Trainer: the step,
// the generator, the history, the best evaluation): the config, the two vocabularies and the
// loader's position, and reading a checkpoint back, checked. The run directory, the one-file
// checkpoint and the metadata codec are the library's (train/).
#pragma once

#include <cstdint>
#include <string>

#include "nn/data/bucket_loader.h"
#include "train/average_checkpoints.h"
#include "train/checkpoint.h"
#include "trainer.h"

namespace g2p {

// The loader's place and the size of what it was given: --resume goes on where the run stopped,
// and is refused on other data.
struct DataState {
  sg::data::LoaderPosition loader;
  int64_t train_pairs = 0;
};

// The task's part of a run's checkpoint metadata: format, config, vocabularies, data state.
sg::nn::Metadata metadata_for(const Model& m, const DataState& data);
// Where --resume continues the loader, after refusing a run `last` of another configuration
// (the flags Config::fields() lets change may), other data (a pair count that differs: another
// dictionary or --train-words) or other vocabularies than `model`'s.
sg::data::LoaderPosition resume_position(const sg::train::Checkpoint& last, const Model& model,
                                         int64_t train_pairs);

// A checkpoint's contents: the model built and loaded, and the file (its metadata; its optimizer
// state, none in model.safetensors).
struct CheckpointFile {
  Model model;
  int64_t step = 0;
  sg::train::Checkpoint checkpoint;
};

// Checks a checkpoint's metadata (every value parsed strictly, the config's sizes against the
// tensors the file holds), then builds its model and loads it.
CheckpointFile read_checkpoint(sg::train::Checkpoint checkpoint);
CheckpointFile read_checkpoint(const std::string& path);

// The mean of several checkpoints of one model, as a g2p checkpoint (`g2p average`): each file
// read as read_checkpoint reads it, and all of one format, configuration and vocabularies
// (sg::train::save_average). Returns the metadata written.
sg::nn::Metadata save_average(const sg::train::AverageRequest& request);

}  // namespace g2p
