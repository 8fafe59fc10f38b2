#include "config.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace g2p {

using sg::data::Vocabulary;

namespace {

double noam_lr(const Config& c, int64_t step) {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  return c.lr_factor * std::pow(static_cast<double>(c.d_model), -0.5) *
         std::min(std::pow(s, -0.5), s * std::pow(static_cast<double>(c.warmup), -1.5));
}

}  // namespace

double learning_rate(const Config& c, int64_t step) {
  if (c.schedule == "noam") return noam_lr(c, step);
  if (step <= c.warmup) return c.lr * static_cast<double>(step) / static_cast<double>(c.warmup);
  const double progress =
      static_cast<double>(step - c.warmup) / static_cast<double>(c.steps - c.warmup);
  return c.lr * 0.5 * (1.0 + std::cos(std::numbers::pi * std::min(progress, 1.0)));
}

void Config::validate() const {
  SG_CHECK(d_model > 0 && heads > 0 && d_model % heads == 0,
           "g2p: --d-model {} must be a positive multiple of --heads {}", d_model, heads);
  SG_CHECK(layers > 0 && d_ff > 0, "g2p: --layers and --ffn must be positive");
  SG_CHECK(dropout >= 0 && dropout < 1, "g2p: --dropout must be in [0, 1), got {}", dropout);
  SG_CHECK(label_smoothing >= 0 && label_smoothing < 1,
           "g2p: --label-smoothing must be in [0, 1), got {}", label_smoothing);
  SG_CHECK(lr_factor > 0, "g2p: --lr-factor must be positive, got {}", lr_factor);
  SG_CHECK(steps > 0 && warmup > 0, "g2p: --steps and --warmup must be positive");
  SG_CHECK(schedule == "noam" || schedule == "cosine",
           "g2p: --schedule must be noam or cosine, got '{}'", schedule);
  SG_CHECK(schedule != "cosine" || (lr > 0 && warmup < steps),
           "g2p: --schedule cosine needs --lr > 0 (got {}) and --warmup {} below --steps {}", lr,
           warmup, steps);
  SG_CHECK(max_tokens >= 64, "g2p: --max-tokens must be at least 64, got {}", max_tokens);
  SG_CHECK(
      eval_every > 0 && dev_words >= 0 && checkpoint_every >= 0 && train_words >= 0,
      "g2p: --eval-every must be positive; --dev-words, --checkpoint-every, --train-words >= 0");
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
  o.max_len = 128;  // positions: dictionary words have at most 28 letters; search stops at 64
  o.pad_idx = Vocabulary::kPad;
  return o;
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
          {"norm_first", norm_first ? "1" : "0"},
          {"max_tokens", std::to_string(max_tokens)},
          {"eval_every", std::to_string(eval_every)},
          {"dev_words", std::to_string(dev_words)},
          {"checkpoint_every", std::to_string(checkpoint_every)},
          {"seed", std::to_string(seed)},
          {"train_words", std::to_string(train_words)}};
}

Config Config::from_map(const std::map<std::string, std::string>& v) {
  auto get = [&](const char* key) -> const std::string& {
    auto it = v.find(key);
    SG_CHECK(it != v.end(), "g2p: checkpoint config has no '{}'", key);
    return it->second;
  };
  Config c;
  c.d_model = parse_number<int64_t>(get("d_model"), "d_model");
  c.heads = parse_number<int64_t>(get("heads"), "heads");
  c.layers = parse_number<int64_t>(get("layers"), "layers");
  c.d_ff = parse_number<int64_t>(get("d_ff"), "d_ff");
  c.dropout = parse_number<double>(get("dropout"), "dropout");
  c.label_smoothing = parse_number<double>(get("label_smoothing"), "label_smoothing");
  c.lr_factor = parse_number<double>(get("lr_factor"), "lr_factor");
  c.steps = parse_number<int64_t>(get("steps"), "steps");
  c.warmup = parse_number<int64_t>(get("warmup"), "warmup");
  c.max_tokens = parse_number<int64_t>(get("max_tokens"), "max_tokens");
  c.eval_every = parse_number<int64_t>(get("eval_every"), "eval_every");
  c.dev_words = parse_number<int64_t>(get("dev_words"), "dev_words");
  c.checkpoint_every = parse_number<int64_t>(get("checkpoint_every"), "checkpoint_every");
  c.seed = parse_number<uint64_t>(get("seed"), "seed");
  c.train_words = parse_number<int64_t>(get("train_words"), "train_words");
  // Checkpoints written before these options existed: the Noam schedule, post-LN.
  c.schedule = v.contains("schedule") ? get("schedule") : "noam";
  c.lr = v.contains("lr") ? parse_number<double>(get("lr"), "lr") : 0.0;
  c.norm_first = v.contains("norm_first") && get("norm_first") == "1";
  c.validate();
  // A config far larger than any file could hold is refused before the model is built.
  SG_CHECK(c.d_model <= 4096 && c.d_ff <= 65536 && c.layers <= 64 && c.heads <= 256,
           "g2p: checkpoint config d_model {} d_ff {} layers {} heads {} is out of range",
           c.d_model, c.d_ff, c.layers, c.heads);
  return c;
}

}  // namespace g2p
