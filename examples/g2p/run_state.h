// A G2P run's state on disk, apart from the training loop (trainer.cpp): what --resume restores
// besides the weights and the optimizer (RunState, in the checkpoint's metadata with the config
// and the vocabularies), and reading a checkpoint back, checked.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "trainer.h"

namespace g2p {

// In last.safetensors the optimizer's state sits beside the model's, under this prefix.
inline constexpr const char* kOptimizerPrefix = "optimizer.";

// The losses and dev evaluations so far, for the plots and the time to a dev WER.
struct History {
  std::vector<double> losses, eval_steps, dev_wer, dev_per;
  // Wall seconds of training (evaluations included, resumed runs summed) at each evaluation, and
  // in all at the last save: the time to reach a dev WER.
  std::vector<double> eval_seconds;
  double seconds = 0;
  nlohmann::json to_json() const {
    return {{"losses", losses},   {"eval_steps", eval_steps},     {"dev_wer", dev_wer},
            {"dev_per", dev_per}, {"eval_seconds", eval_seconds}, {"seconds", seconds}};
  }
  static History from_json(const nlohmann::json& j) {
    History h;
    j.at("losses").get_to(h.losses), j.at("eval_steps").get_to(h.eval_steps);
    j.at("dev_wer").get_to(h.dev_wer), j.at("dev_per").get_to(h.dev_per);
    j.at("eval_seconds").get_to(h.eval_seconds), j.at("seconds").get_to(h.seconds);
    return h;
  }
};

// Everything --resume needs besides the weights and the optimizer.
struct RunState {
  int64_t step = 0;
  sg::data::LoaderPosition loader;
  uint64_t global_rng = 0;
  double best_wer = 2.0;
  int64_t best_step = 0;
  double best_per = 0;
  int64_t train_pairs = 0;  // the loader's examples: a resume on other data is refused
  History history;
};

// The checkpoint metadata of a run: its config, vocabularies and state.
sg::nn::Metadata metadata_for(const Model& m, const RunState& s);

// A checkpoint's contents: the model built and loaded, the run's state, the optimizer's state
// (prefix removed; empty in model.safetensors).
struct CheckpointFile {
  Model model;
  RunState state;
  sg::nn::NamedTensors optimizer;
};

// Reads a checkpoint, every metadata value checked, and builds its model.
CheckpointFile read_checkpoint(const std::string& path);

}  // namespace g2p
