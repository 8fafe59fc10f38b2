// Everything a copy-task run depends on, with the three presets. The whole config is stored in
// each checkpoint's metadata, so `eval`, `decode` and `--resume` rebuild exactly the same setup.
//   tiny      2 layers, d_model 32,  4 heads, ffn 64,   length 10, batch 80  (the reference setup)
//   annotated 2 layers, d_model 512, 8 heads, ffn 2048, length 10, batch 80  (The Annotated
//   Transformer) medium    4 layers, d_model 256, 8 heads, ffn 1024, length 64, batch 32
#pragma once

#include <map>
#include <string>

#include "nn/nn.h"
#include "tasks.h"

namespace copy_task {

struct Config {
  std::string preset = "tiny";
  Task task = Task::Copy;
  int64_t vocab = 11, length = 10, min_len = 10, batch = 80;
  int64_t layers = 2, d_model = 32, heads = 4, d_ff = 64;
  double dropout = 0.0;
  bool norm_first = false;
  std::string positional = "sinusoidal";
  int64_t steps = 1000, warmup = 400;
  double lr_factor = 1.0, beta1 = 0.9, beta2 = 0.98, eps = 1e-9, label_smoothing = 0.0;
  int64_t eval_every = 100, eval_samples = 200, final_samples = 1000, checkpoint_every = 500;
  uint64_t seed = 0;

  static Config preset_named(const std::string& name);  // throws for an unknown preset
  sg::nn::TransformerOptions model_options() const;
  void validate() const;  // clear errors for bad combinations (d_model % heads, lengths...)

  // "key=value" pairs, for checkpoint metadata and the metrics JSON.
  std::map<std::string, std::string> to_map() const;
  // Strict: every number and boolean parses in full, or the error names the key.
  static Config from_map(const std::map<std::string, std::string>& values);

  // A lower bound on the values in the model's state (parameters and buffers), computed without
  // building it: a checkpoint holding fewer cannot be this model, and is refused before a config
  // such as layers=1000000000 allocates anything.
  int64_t min_state_values() const;

  static constexpr int64_t kMaxLength = 65536;
};

}  // namespace copy_task
