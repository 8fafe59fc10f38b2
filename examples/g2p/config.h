// The G2P run's configuration: the model, the recipe and its schedule, and their text form in a
// checkpoint's metadata (to_map, from_map).
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <string>

#include "nn/nn.h"

namespace g2p {

struct Config {
  std::string data;  // cmudict.dict
  // The model and recipe of the 45-minute run chapter 12b reports: 35,000 steps were what fitted
  // 45 minutes of training on the 2 cores it ran on, at the speed they had that day.
  int64_t d_model = 128, heads = 4, layers = 2, d_ff = 512;
  double dropout = 0.1, label_smoothing = 0.1, lr_factor = 1.0;
  int64_t steps = 35000, warmup = 1000, max_tokens = 2000;
  // "noam": factor · d_model^-0.5 · min(s^-0.5, s · warmup^-1.5), the paper's, no end in sight.
  // "cosine": a linear rise to `lr` over warmup steps, then a half cosine down to 0 at `steps`,
  // for a run whose length is fixed in advance.
  std::string schedule = "cosine";
  double lr = 2e-3;         // the peak of "cosine"
  bool norm_first = false;  // false: post-LN (the paper); true: pre-LN
  int64_t eval_every = 5000, dev_words = 1000, checkpoint_every = 5000;
  uint64_t seed = 22;
  // Only the first this many training words (0 = all): for tests and quick looks.
  int64_t train_words = 0;

  void validate() const;
  sg::nn::TransformerOptions model_options(int64_t letters, int64_t phonemes) const;
  std::map<std::string, std::string> to_map() const;
  static Config from_map(const std::map<std::string, std::string>& values);
};

// The lr of update number `step` (1 for the first) under config.schedule.
double learning_rate(const Config& config, int64_t step);

// `text` as a number of type T, all of it, or an error naming `what` (a config key, a metadata
// key).
template <typename T>
T parse_number(const std::string& text, const std::string& what) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  SG_CHECK(!text.empty() && ec == std::errc() && end == text.data() + text.size(),
           "g2p: '{}' = '{}' is not a valid number", what, text.substr(0, 80));
  return value;
}

}  // namespace g2p
