// Everything a copy-task run depends on, with the three presets. The whole config is stored in
// each checkpoint's metadata, so `eval`, `decode` and `--resume` rebuild exactly the same setup.
//   tiny      2 layers, d_model 32,  4 heads, ffn 64,   length 10, batch 80  (the reference setup)
//   annotated 2 layers, d_model 512, 8 heads, ffn 2048, length 10, batch 80  (The Annotated
//             Transformer)
//   medium    4 layers, d_model 256, 8 heads, ffn 1024, length 64, batch 32
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nn/nn.h"
#include "tasks.h"
#include "train/loop_config.h"
#include "train/option_schema.h"

namespace copy_task {

struct Config {
  std::string preset = "tiny";
  std::string task = "copy";  // copy | reverse | sort (tasks.h)
  int64_t vocab = 11, length = 10, min_len = 10, batch = 80;
  int64_t layers = 2, d_model = 32, heads = 4, d_ff = 64;
  double dropout = 0.0;
  bool norm_first = false;
  std::string positional = "sinusoidal";
  sg::train::LoopConfig loop{.steps = 1000, .eval_every = 100, .checkpoint_every = 500};
  int64_t warmup = 400;
  double lr_factor = 1.0, beta1 = 0.9, beta2 = 0.98, eps = 1e-9, label_smoothing = 0.0;
  int64_t eval_samples = 200, final_samples = 1000;
  uint64_t seed = 0;

  static Config preset_named(const std::string& name);  // throws for an unknown preset
  // Every option but the preset's name, once: its flag, bounds, help and rule on --resume (the
  // flags, to_map, parse_map, fields and check_bounds come from it).
  sg::train::OptionSchema schema();
  Task task_kind() const { return parse_task(task); }
  sg::nn::TransformerOptions model_options() const;
  // Clear errors for bad combinations (d_model % heads, lengths...) and for sizes beyond the
  // bounds below: check_settings(), then check_bounds(). A checkpoint's config is compared with
  // the tensors of its file between the two (read_checkpoint).
  void validate() const;
  void check_settings() const;
  void check_bounds() const;

  // "key=value" pairs, for checkpoint metadata and the metrics JSON.
  std::map<std::string, std::string> to_map() const;
  // Strict: every number and boolean parses in full and within its bounds, or the error names the
  // key; then validate().
  static Config from_map(const std::map<std::string, std::string>& values);
  // The same without validate(), for a checkpoint whose sizes are compared with its tensors.
  static Config parse_map(const std::map<std::string, std::string>& values);
  // Each key of to_map() with its flag, and whether --resume may change it (--steps and the
  // evaluation and checkpoint cadence may; the model, the task, the data and the recipe may not).
  // All but "preset", a name only: the sizes it stands for are compared one by one.
  static std::vector<sg::train::ConfigField> fields();

  // Upper bounds, the same for the command line, validate() and a checkpoint's config: a model
  // this program can train, never a size whose products overflow or whose allocation takes
  // minutes before failing.
  static constexpr int64_t kMaxLength = 65536, kMaxVocab = 1 << 20, kMaxBatch = 65536;
  static constexpr int64_t kMaxLayers = 64, kMaxDModel = 16384, kMaxHeads = 256, kMaxFfn = 65536;
  static constexpr int64_t kMaxSteps = sg::train::LoopConfig::kMaxSteps, kMaxSamples = 10'000'000;
};

}  // namespace copy_task
