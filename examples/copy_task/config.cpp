#include "config.h"

#include <cmath>

#include "nn/train/numbers.h"

namespace copy_task {

using sg::train::check_range;
using sg::train::ConfigField;
using sg::train::OnResume;

Config Config::preset_named(const std::string& name) {
  Config c;
  c.preset = name;
  if (name == "tiny") return c;
  if (name == "annotated") {
    c.d_model = 512, c.heads = 8, c.d_ff = 2048;
    return c;
  }
  if (name == "medium") {
    c.layers = 4, c.d_model = 256, c.heads = 8, c.d_ff = 1024, c.length = 64, c.min_len = 64;
    c.batch = 32, c.steps = 2000;
    return c;
  }
  SG_FAIL("unknown preset '{}' (expected tiny, annotated or medium)", name);
}

sg::nn::TransformerOptions Config::model_options() const {
  sg::nn::TransformerOptions o;
  o.src_vocab = vocab;
  o.tgt_vocab = vocab;
  o.d_model = d_model;
  o.heads = heads;
  o.num_encoder_layers = layers;
  o.num_decoder_layers = layers;
  o.d_ff = d_ff;
  o.dropout = dropout;
  o.norm_first = norm_first;
  o.positional = positional;
  o.max_len = std::max<int64_t>(length, 16);
  o.pad_idx = kPad;
  return o;
}

void Config::validate() const {
  check_settings();
  check_bounds();
}

void Config::check_settings() const {
  SG_CHECK(d_model > 0 && heads > 0 && d_model % heads == 0,
           "d_model {} is not divisible by heads {}", d_model, heads);
  SG_CHECK(layers >= 1 && d_ff >= 1, "layers and ffn must be positive (got {} and {})", layers,
           d_ff);
  SG_CHECK(vocab >= 3, "vocab must be at least 3 (pad, start, one token), got {}", vocab);
  SG_CHECK(length >= 2 && length <= kMaxLength,
           "length must be in [2, {}] (attention needs length^2 values per head), got {}",
           kMaxLength, length);
  SG_CHECK(min_len >= 2 && min_len <= length, "min-len must be in [2, length={}], got {}", length,
           min_len);
  SG_CHECK(batch >= 1 && steps >= 0 && warmup >= 1, "batch, steps and warmup must be positive");
  SG_CHECK(dropout >= 0 && dropout < 1, "dropout must be in [0, 1), got {}", dropout);
  SG_CHECK(std::isfinite(lr_factor) && lr_factor > 0,
           "lr-factor must be positive and finite, got {}", lr_factor);
  SG_CHECK(label_smoothing >= 0 && label_smoothing < 1, "label-smoothing must be in [0, 1), got {}",
           label_smoothing);
  SG_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && eps > 0 && std::isfinite(eps),
           "Adam betas must be in [0, 1) and eps positive, got {}, {} and {}", beta1, beta2, eps);
  SG_CHECK(positional == "sinusoidal" || positional == "learned",
           "positional must be sinusoidal or learned, got '{}'", positional);
}

void Config::check_bounds() const {
  check_range("--vocab", vocab, int64_t{3}, kMaxVocab);
  check_range("--batch", batch, int64_t{1}, kMaxBatch);
  check_range("--layers", layers, int64_t{1}, kMaxLayers);
  check_range("--d-model", d_model, int64_t{1}, kMaxDModel);
  check_range("--heads", heads, int64_t{1}, kMaxHeads);
  check_range("--ffn", d_ff, int64_t{1}, kMaxFfn);
  check_range("--steps", steps, int64_t{0}, kMaxSteps);
  check_range("--warmup", warmup, int64_t{1}, kMaxSteps);
  check_range("--eval-every", eval_every, int64_t{1}, kMaxSteps);
  check_range("--checkpoint-every", checkpoint_every, int64_t{0}, kMaxSteps);
  check_range("--eval-samples", eval_samples, int64_t{1}, kMaxSamples);
  check_range("--final-samples", final_samples, int64_t{1}, kMaxSamples);
  model_options().validate();
}

std::map<std::string, std::string> Config::to_map() const {
  return {{"preset", preset},
          {"task", task_name(task)},
          {"vocab", std::to_string(vocab)},
          {"length", std::to_string(length)},
          {"min_len", std::to_string(min_len)},
          {"batch", std::to_string(batch)},
          {"layers", std::to_string(layers)},
          {"d_model", std::to_string(d_model)},
          {"heads", std::to_string(heads)},
          {"d_ff", std::to_string(d_ff)},
          {"dropout", fmt::format("{}", dropout)},
          {"norm_first", norm_first ? "true" : "false"},
          {"positional", positional},
          {"steps", std::to_string(steps)},
          {"warmup", std::to_string(warmup)},
          {"lr_factor", fmt::format("{}", lr_factor)},
          {"beta1", fmt::format("{}", beta1)},
          {"beta2", fmt::format("{}", beta2)},
          {"eps", fmt::format("{}", eps)},
          {"label_smoothing", fmt::format("{}", label_smoothing)},
          {"eval_every", std::to_string(eval_every)},
          {"eval_samples", std::to_string(eval_samples)},
          {"final_samples", std::to_string(final_samples)},
          {"checkpoint_every", std::to_string(checkpoint_every)},
          {"seed", std::to_string(seed)}};
}

const std::vector<ConfigField>& Config::fields() {
  static const std::vector<ConfigField> fields = {
      {"vocab", "--vocab", OnResume::kFixedModel},
      {"layers", "--layers", OnResume::kFixedModel},
      {"d_model", "--d-model", OnResume::kFixedModel},
      {"heads", "--heads", OnResume::kFixedModel},
      {"d_ff", "--ffn", OnResume::kFixedModel},
      {"dropout", "--dropout", OnResume::kFixedModel},
      {"norm_first", "--norm-first", OnResume::kFixedModel},
      {"positional", "--positional", OnResume::kFixedModel},
      {"length", "--length", OnResume::kFixedModel},
      {"task", "--task", OnResume::kFixed},
      {"min_len", "--min-len", OnResume::kFixed},
      {"batch", "--batch", OnResume::kFixed},
      {"warmup", "--warmup", OnResume::kFixed},
      {"lr_factor", "--lr-factor", OnResume::kFixed},
      {"beta1", "beta1 (of --preset)", OnResume::kFixed},
      {"beta2", "beta2 (of --preset)", OnResume::kFixed},
      {"eps", "eps (of --preset)", OnResume::kFixed},
      {"label_smoothing", "--label-smoothing", OnResume::kFixed},
      {"seed", "--seed", OnResume::kFixed},
      {"steps", "--steps", OnResume::kMayChange},
      {"eval_every", "--eval-every", OnResume::kMayChange},
      {"eval_samples", "--eval-samples", OnResume::kMayChange},
      {"final_samples", "--final-samples", OnResume::kMayChange},
      {"checkpoint_every", "--checkpoint-every", OnResume::kMayChange}};
  return fields;
}

Config Config::from_map(const std::map<std::string, std::string>& values) {
  Config c = parse_map(values);
  c.validate();
  return c;
}

Config Config::parse_map(const std::map<std::string, std::string>& values) {
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = values.find(key);
    SG_CHECK(it != values.end(), "checkpoint config is missing '{}'", key);
    return it->second;
  };
  auto what = [](const std::string& key) { return fmt::format("checkpoint config '{}'", key); };
  auto integer = [&](const std::string& key) {
    return sg::train::parse_number<int64_t>(get(key), what(key));
  };
  auto real = [&](const std::string& key) {
    return sg::train::parse_number<double>(get(key), what(key));
  };
  Config c = preset_named(get("preset"));
  c.task = parse_task(get("task"));
  c.vocab = integer("vocab"), c.length = integer("length"), c.min_len = integer("min_len");
  c.batch = integer("batch"), c.layers = integer("layers"), c.d_model = integer("d_model");
  c.heads = integer("heads"), c.d_ff = integer("d_ff"), c.dropout = real("dropout");
  c.norm_first = sg::train::parse_bool(get("norm_first"), what("norm_first"));
  c.positional = get("positional");
  c.steps = integer("steps"), c.warmup = integer("warmup"), c.lr_factor = real("lr_factor");
  c.beta1 = real("beta1"), c.beta2 = real("beta2"), c.eps = real("eps");
  c.label_smoothing = real("label_smoothing");
  c.eval_every = integer("eval_every"), c.eval_samples = integer("eval_samples");
  c.final_samples = integer("final_samples"), c.checkpoint_every = integer("checkpoint_every");
  // The full unsigned range, as written.
  c.seed = sg::train::parse_number<uint64_t>(get("seed"), what("seed"), "a seed in [0, 2^64)");
  return c;
}

}  // namespace copy_task
