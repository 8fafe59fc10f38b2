// The one-file checkpoint of a training run: the model's tensors, the optimizer's state (tensors
// named "optimizer.<name>"), a moving average of the weights if the run keeps one ("ema.<name>")
// and the run's metadata in one safetensors file, written atomically, so weights, optimizer and
// average always come from the same step. Reading checks a file before any model is built from it.
//
//   sg::train::save_checkpoint(dir + "/last.safetensors", model, &optimizer, metadata, &ema);
//   sg::train::Checkpoint c = sg::train::read_checkpoint(path);   // exists, finite, split
//   sg::train::check_fits(c, config.model_options());   // before building: sizes vs the file
//   sg::train::restore(c, model, &optimizer);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "autograd/generator.h"
#include "nn/module.h"
#include "nn/optim/exponential_moving_average.h"
#include "nn/optim/optimizer.h"
#include "nn/safetensors.h"
#include "nn/transformer_options.h"

namespace sg::nn {
struct DecoderOnlyOptions;  // nn/decoder_only_transformer.h
}  // namespace sg::nn

namespace sg::train {

// The optimizer's state and the moving average sit beside the model's tensors under these
// prefixes (a model tensor may not start with either).
inline constexpr const char* kOptimizerPrefix = "optimizer.";
inline constexpr const char* kEmaPrefix = "ema.";

struct Checkpoint {
  std::string path;
  nn::NamedTensors model;      // the module's state_dict
  nn::NamedTensors optimizer;  // the optimizer's state, prefix removed (none in a model-only file)
  nn::Metadata metadata;
  std::string optimizer_path;    // where the optimizer state came from (path, or an older file)
  nn::NamedTensors ema;          // the moving average's state, prefix removed (none without one)
  int64_t model_values() const;  // elements of all the model's tensors
};

// Writes model.state_dict(), the optimizer's state and the moving average's (each when given) and
// the metadata in one file, atomically (a crash leaves the old file or the new one).
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer, const nn::Metadata& metadata,
                     const optim::ExponentialMovingAverage* ema = nullptr);

// Reads a checkpoint and checks it: it exists, is a valid safetensors file, and no tensor of the
// model or of the moving average holds an infinity or a NaN (a file saved from a diverged run).
Checkpoint read_checkpoint(const std::string& path);

// A lower bound on the values in a Transformer's state (parameters and buffers), computed without
// building it; saturates at INT64_MAX instead of overflowing.
int64_t min_state_values(const nn::TransformerOptions& options);
// Refuses a checkpoint holding fewer model values than `options` needs: a config such as
// layers=1000000000 is refused before it allocates anything. The exact check, name by name and
// shape by shape, comes when the tensors are copied in (restore).
void check_fits(const Checkpoint& checkpoint, const nn::TransformerOptions& options);
// The same for a decoder-only model (nn/decoder_only_transformer.h).
int64_t min_state_values(const nn::DecoderOnlyOptions& options);
void check_fits(const Checkpoint& checkpoint, const nn::DecoderOnlyOptions& options);

// Copies the checkpoint's tensors into the model, and its optimizer state into `optimizer` when
// given. Each of the two loads all or nothing (nn::load, Optimizer::load_state); errors name the
// file.
void restore(const Checkpoint& checkpoint, nn::Module& model, optim::Optimizer* optimizer);
// A model of type Model built from `options` with the checkpoint's weights, in evaluation mode:
// its sizes checked against the file first (check_fits), built without drawing from the global
// generator (the initial weights are replaced by the file's), then loaded (restore).
//   auto model = sg::train::load_model<sg::nn::Transformer>(c, config.model_options());
template <class Model, class Options>
std::shared_ptr<Model> load_model(const Checkpoint& checkpoint, const Options& options) {
  check_fits(checkpoint, options);
  std::shared_ptr<Model> model;
  {
    const ForkRng keep_the_stream;
    model = std::make_shared<Model>(options);
  }
  restore(checkpoint, *model, nullptr);
  model->eval();
  return model;
}

// The optimizer's part alone (for a model already loaded): its state must be there.
void restore_optimizer(const Checkpoint& checkpoint, optim::Optimizer& optimizer);
// The moving average's part: its state must be there, for an average of the same decay.
void restore_ema(const Checkpoint& checkpoint, optim::ExponentialMovingAverage& ema);

// The name of the first floating-point tensor holding an infinity or a NaN, if any.
std::optional<std::string> first_non_finite(const nn::NamedTensors& tensors);

}  // namespace sg::train
