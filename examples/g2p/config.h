// The G2P run's configuration: the model, the recipe and its schedule, and their text form in a
// checkpoint's metadata (to_map, from_map).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "g2p_data.h"
#include "nn/nn.h"
#include "train/loop_config.h"
#include "train/option_schema.h"

namespace g2p {

struct Config {
  std::string data;  // cmudict.dict
  // The model and recipe of the 45-minute run chapter 12b reports: 50,000 steps are what fitted
  // 45 minutes of training on the 2 cores it ran on with --bf16 (AVX512-BF16 products), at the
  // speed they had that day; the moving average and the mean of the last 5 step checkpoints.
  int64_t d_model = 128, heads = 4, layers = 2, d_ff = 512;
  double dropout = 0.1, label_smoothing = 0.1, lr_factor = 1.0;
  int64_t warmup = 1000, max_tokens = 2000;
  // "noam": factor · d_model^-0.5 · min(s^-0.5, s · warmup^-1.5), the paper's, no end in sight
  // (sg::optim::NoamLR). "cosine": a linear rise to `lr` over warmup steps, then a half cosine
  // down to 0 at `steps`, for a run whose length is fixed in advance (sg::optim::WarmupCosineLR).
  std::string schedule = "cosine";
  double lr = 2e-3;         // the peak of "cosine"
  bool norm_first = false;  // false: post-LN (the paper); true: pre-LN
  // 50,000 steps; greedy dev WER every 5000 on dev_words words; a moving average of the weights
  // (sg::optim::ExponentialMovingAverage, with torch_ema's warm-up of the decay) evaluated and
  // saved instead of them; step checkpoints every 2000 steps, and at the end the mean of the
  // newest 5 (sg::train::average_checkpoints), kept as model.safetensors if it is the best.
  sg::train::LoopConfig loop{.steps = 50000,
                             .eval_every = 5000,
                             .checkpoint_every = 2000,
                             .ema = 0.999,
                             .average_last = 5};
  int64_t dev_words = 1000;
  uint64_t seed = 22;
  // Only the first this many training words (0 = all): for tests and quick looks.
  int64_t train_words = 0;

  // Every option once: its flag, bounds, help and rule on --resume (the flags, to_map, from_map
  // and fields come from it).
  sg::train::OptionSchema schema();
  // Clear errors for values out of the schema's bounds and for bad combinations.
  void validate() const;
  sg::nn::TransformerOptions model_options(int64_t letters, int64_t phonemes) const;
  std::map<std::string, std::string> to_map() const;
  // Strict: every number and boolean parses in full and in bounds, or the error names the key;
  // then validate(), so a checkpoint's config has the bounds a command line has.
  static Config from_map(const std::map<std::string, std::string>& values);
  // Each key of to_map() with its flag, and whether --resume may change it.
  static std::vector<sg::train::ConfigField> fields();

  // The optimizer's base lr (1 for noam, whose schedule gives the rate; lr for cosine) and the
  // schedule that scales it, from the optimizer's step count.
  double base_lr() const { return schedule == "noam" ? 1.0 : lr; }
  std::unique_ptr<sg::optim::LRScheduler> make_schedule(sg::optim::Optimizer& optimizer) const;

  // Upper bounds, the same for the command line, validate() and a checkpoint's config.
  static constexpr int64_t kMaxDModel = 4096, kMaxHeads = 256, kMaxLayers = 64, kMaxFfn = 65536;
  static constexpr int64_t kMaxSteps = sg::train::LoopConfig::kMaxSteps, kMaxTokens = 1'000'000;
  // The fewest padded tokens a batch may hold: the longest pair load_dataset lets through (its
  // letters, then <bos> phonemes <eos>), so every word fits a batch of its own.
  static constexpr int64_t kMinTokens = static_cast<int64_t>(kMaxLetters + kMaxPhonemes + 2);
};

}  // namespace g2p
