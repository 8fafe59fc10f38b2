#include "config.h"

#include <cmath>

#include "nn/train/numbers.h"

namespace g2p {

using sg::data::Vocabulary;
using sg::train::check_range;
using sg::train::ConfigField;
using sg::train::OnResume;

void Config::validate() const {
  check_range("g2p: --d-model", d_model, int64_t{1}, kMaxDModel);
  check_range("g2p: --heads", heads, int64_t{1}, kMaxHeads);
  SG_CHECK(d_model % heads == 0, "g2p: --d-model {} must be a positive multiple of --heads {}",
           d_model, heads);
  check_range("g2p: --layers", layers, int64_t{1}, kMaxLayers);
  check_range("g2p: --ffn", d_ff, int64_t{1}, kMaxFfn);
  SG_CHECK(dropout >= 0 && dropout < 1, "g2p: --dropout must be in [0, 1), got {}", dropout);
  SG_CHECK(label_smoothing >= 0 && label_smoothing < 1,
           "g2p: --label-smoothing must be in [0, 1), got {}", label_smoothing);
  SG_CHECK(lr_factor > 0 && std::isfinite(lr_factor),
           "g2p: --lr-factor must be positive and finite, got {}", lr_factor);
  check_range("g2p: --steps", steps, int64_t{1}, kMaxSteps);
  check_range("g2p: --warmup", warmup, int64_t{1}, kMaxSteps);
  SG_CHECK(schedule == "noam" || schedule == "cosine",
           "g2p: --schedule must be noam or cosine, got '{}'", schedule);
  SG_CHECK(schedule != "cosine" || (lr > 0 && std::isfinite(lr) && warmup < steps),
           "g2p: --schedule cosine needs --lr > 0 (got {}) and --warmup {} below --steps {}", lr,
           warmup, steps);
  SG_CHECK(max_tokens >= 64, "g2p: --max-tokens must be at least 64, got {}", max_tokens);
  check_range("g2p: --max-tokens", max_tokens, int64_t{64}, kMaxTokens);
  SG_CHECK(
      eval_every > 0 && dev_words >= 0 && checkpoint_every >= 0 && train_words >= 0,
      "g2p: --eval-every must be positive; --dev-words, --checkpoint-every, --train-words >= 0");
  SG_CHECK(ema == 0 || (ema > 0 && ema < 1),
           "g2p: --ema must be a decay in (0, 1) (or 0: no moving average), got {}", ema);
  check_range("g2p: --average-last", average_last, int64_t{0}, kMaxAverageLast);
  SG_CHECK(average_last == 0 || checkpoint_every > 0,
           "g2p: --average-last {} needs step checkpoints to average: --checkpoint-every must be "
           "positive",
           average_last);
}

sg::nn::TransformerOptions Config::model_options(int64_t letters, int64_t phonemes) const {
  sg::nn::TransformerOptions o;
  o.src_vocab = letters;
  o.tgt_vocab = phonemes;
  o.d_model = d_model;
  o.heads = heads;
  o.num_encoder_layers = o.num_decoder_layers = layers;
  o.d_ff = d_ff;
  o.dropout = dropout;
  o.norm_first = norm_first;
  o.max_len = 128;  // positions: words have at most 64 letters (g2p_data.h); search stops at 64
  o.pad_idx = Vocabulary::kPad;
  return o;
}

std::unique_ptr<sg::optim::LRScheduler> Config::make_schedule(sg::optim::Optimizer& opt) const {
  if (schedule == "noam")
    return std::make_unique<sg::optim::NoamLR>(opt, d_model, warmup, lr_factor);
  return std::make_unique<sg::optim::WarmupCosineLR>(opt, warmup, steps);
}

std::map<std::string, std::string> Config::to_map() const {
  return {{"d_model", std::to_string(d_model)},
          {"heads", std::to_string(heads)},
          {"layers", std::to_string(layers)},
          {"d_ff", std::to_string(d_ff)},
          {"dropout", fmt::format("{}", dropout)},
          {"label_smoothing", fmt::format("{}", label_smoothing)},
          {"lr_factor", fmt::format("{}", lr_factor)},
          {"steps", std::to_string(steps)},
          {"warmup", std::to_string(warmup)},
          {"schedule", schedule},
          {"lr", fmt::format("{}", lr)},
          {"norm_first", norm_first ? "true" : "false"},
          {"max_tokens", std::to_string(max_tokens)},
          {"eval_every", std::to_string(eval_every)},
          {"dev_words", std::to_string(dev_words)},
          {"checkpoint_every", std::to_string(checkpoint_every)},
          {"ema", fmt::format("{}", ema)},
          {"average_last", std::to_string(average_last)},
          {"seed", std::to_string(seed)},
          {"train_words", std::to_string(train_words)}};
}

const std::vector<ConfigField>& Config::fields() {
  static const std::vector<ConfigField> fields = {
      {"d_model", "--d-model", OnResume::kFixedModel},
      {"heads", "--heads", OnResume::kFixedModel},
      {"layers", "--layers", OnResume::kFixedModel},
      {"d_ff", "--ffn", OnResume::kFixedModel},
      {"dropout", "--dropout", OnResume::kFixedModel},
      {"norm_first", "--norm-first", OnResume::kFixedModel},
      {"label_smoothing", "--label-smoothing", OnResume::kFixed},
      {"lr_factor", "--lr-factor", OnResume::kFixed},
      {"warmup", "--warmup", OnResume::kFixed},
      {"schedule", "--schedule", OnResume::kFixed},
      {"lr", "--lr", OnResume::kFixed},
      {"max_tokens", "--max-tokens", OnResume::kFixed},
      {"seed", "--seed", OnResume::kFixed},
      // The average so far depends on every step: it cannot start or change halfway.
      {"ema", "--ema", OnResume::kFixed},
      // With --schedule cosine, --steps also moves where the cosine ends.
      {"steps", "--steps", OnResume::kMayChange},
      {"eval_every", "--eval-every", OnResume::kMayChange},
      {"dev_words", "--dev-words", OnResume::kMayChange},
      {"checkpoint_every", "--checkpoint-every", OnResume::kMayChange},
      // Only what is kept and averaged at the end: the newest K step checkpoints there are.
      {"average_last", "--average-last", OnResume::kMayChange},
      // The data a resumed run reads is checked by what it holds (its number of pronunciations).
      {"train_words", "--train-words", OnResume::kMayChange}};
  return fields;
}

Config Config::from_map(const std::map<std::string, std::string>& v) {
  auto get = [&](const char* key) -> const std::string& {
    auto it = v.find(key);
    SG_CHECK(it != v.end(), "g2p: checkpoint config has no '{}'", key);
    return it->second;
  };
  auto what = [](const char* key) { return fmt::format("g2p: checkpoint config '{}'", key); };
  auto integer = [&](const char* key) {
    return sg::train::parse_number<int64_t>(get(key), what(key));
  };
  auto real = [&](const char* key) { return sg::train::parse_number<double>(get(key), what(key)); };
  Config c;
  c.d_model = integer("d_model"), c.heads = integer("heads"), c.layers = integer("layers");
  c.d_ff = integer("d_ff"), c.dropout = real("dropout");
  c.label_smoothing = real("label_smoothing"), c.lr_factor = real("lr_factor");
  c.steps = integer("steps"), c.warmup = integer("warmup"), c.max_tokens = integer("max_tokens");
  c.eval_every = integer("eval_every"), c.dev_words = integer("dev_words");
  c.checkpoint_every = integer("checkpoint_every"), c.train_words = integer("train_words");
  c.seed = sg::train::parse_number<uint64_t>(get("seed"), what("seed"));
  // Checkpoints written before these options existed: the Noam schedule, post-LN.
  c.schedule = v.contains("schedule") ? get("schedule") : "noam";
  c.lr = v.contains("lr") ? real("lr") : 0.0;
  c.norm_first =
      v.contains("norm_first") && sg::train::parse_bool(get("norm_first"), what("norm_first"));
  // ... and before the moving average and checkpoint averaging: neither.
  c.ema = v.contains("ema") ? real("ema") : 0.0;
  c.average_last = v.contains("average_last") ? integer("average_last") : 0;
  c.validate();
  return c;
}

}  // namespace g2p
