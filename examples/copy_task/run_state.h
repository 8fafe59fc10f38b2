// A training run's state on disk, apart from the training loop (trainer.cpp): what --resume
// restores besides the weights and the optimizer (RunState, kept in the checkpoint's metadata),
// reading and checking a checkpoint, and the files a run keeps in its directory.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "nn/nn.h"
#include "trainer.h"

namespace copy_task {

// In last.safetensors the optimizer's state sits beside the model's, under this prefix: one file,
// renamed into place in one step, so weights and optimizer always come from the same step.
inline constexpr const char* kOptimizerPrefix = "optimizer.";

// The losses and held-out evaluations so far, for the plots (a resumed run continues them).
struct History {
  std::vector<double> steps, losses, eval_steps, exact, token_acc;
  nlohmann::json to_json() const {
    return {{"steps", steps},
            {"losses", losses},
            {"eval_steps", eval_steps},
            {"exact", exact},
            {"token_acc", token_acc}};
  }
  static History from_json(const nlohmann::json& j) {
    History h;
    j.at("steps").get_to(h.steps), j.at("losses").get_to(h.losses);
    j.at("eval_steps").get_to(h.eval_steps), j.at("exact").get_to(h.exact);
    j.at("token_acc").get_to(h.token_acc);
    return h;
  }
};

// Everything --resume needs besides the weights and the optimizer.
struct RunState {
  int64_t step = 0;
  uint64_t data_rng = 0, eval_rng = 0, global_rng = 0;
  double best_exact = -1;
  int64_t best_step = 0;
  std::optional<int64_t> first_perfect;
  History history;
};

// The checkpoint metadata of a run: its config and its state.
sg::nn::Metadata metadata_for(const Config& config, const RunState& state);

// The name of the first floating-point tensor holding an infinity or a NaN, if any.
std::optional<std::string> first_non_finite(const sg::nn::NamedTensors& tensors);

// A checkpoint's contents, checked before any model is built from them.
struct CheckpointFile {
  Config config;
  sg::nn::NamedTensors model, optimizer;  // optimizer: its state, prefix removed (last.* only)
  sg::nn::Metadata metadata;
};

// Reads a checkpoint and checks it: its metadata, a config that fits its tensors, no infinities.
CheckpointFile read_checkpoint(const std::string& path);

// The files a run leaves in its directory.
struct RunFiles {
  std::string best, last, legacy_optim;
  explicit RunFiles(const std::string& dir)
      : best(dir + "/model.safetensors"),
        last(dir + "/last.safetensors"),
        legacy_optim(dir + "/last.optim.safetensors") {}
};

// Refuses to train over an existing run unless told to continue it (--resume) or replace it
// (--overwrite, which removes its checkpoints first).
void prepare_out_dir(const TrainOptions& options, const RunFiles& files);

// Restores the model, the optimizer and the run's state from last.safetensors. A checkpoint of an
// older version keeps the optimizer in last.optim.safetensors: accepted only when both files are
// from the same step.
RunState resume_from(const RunFiles& files, const Config& config, sg::nn::Transformer& model,
                     sg::optim::Optimizer& optimizer);

}  // namespace copy_task
