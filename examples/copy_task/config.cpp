#include "config.h"

#include "train/numbers.h"

namespace copy_task {

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
    c.batch = 32, c.loop.steps = 2000;
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

sg::train::OptionSchema Config::schema() {
  sg::train::OptionSchema s;
  s.integer("vocab", vocab, 3, kMaxVocab, OnResume::kFixedModel,
            "vocabulary size (0 = pad, 1 = start)")
      .integer("layers", layers, 1, kMaxLayers, OnResume::kFixedModel, "encoder and decoder layers")
      .integer("d_model", d_model, 1, kMaxDModel, OnResume::kFixedModel, "model width")
      .integer("heads", heads, 1, kMaxHeads, OnResume::kFixedModel, "attention heads")
      .integer("d_ff", d_ff, 1, kMaxFfn, OnResume::kFixedModel, "feed-forward width")
      .flag("--ffn")
      .real("dropout", dropout, 0, 1, OnResume::kFixedModel, "dropout probability")
      .excluding_hi()
      .boolean("norm_first", norm_first, OnResume::kFixedModel, "pre-LN layers instead of post-LN")
      .text("positional", positional, OnResume::kFixedModel, "sinusoidal | learned")
      .one_of({"sinusoidal", "learned"})
      .integer("length", length, 2, kMaxLength, OnResume::kFixedModel,
               "sequence length, start symbol included")
      .text("task", task, OnResume::kFixed, "copy | reverse | sort")
      .one_of({"copy", "reverse", "sort"})
      .integer("min_len", min_len, 2, kMaxLength, OnResume::kFixed,
               "shortest sequence (< length gives padded, variable lengths; default: --length)")
      .integer("batch", batch, 1, kMaxBatch, OnResume::kFixed, "sequences per step")
      .integer("warmup", warmup, 1, kMaxSteps, OnResume::kFixed, "Noam warm-up steps")
      .real("lr_factor", lr_factor, 0, 1e30, OnResume::kFixed, "Noam factor")
      .excluding_lo()
      .real("beta1", beta1, 0, 1, OnResume::kFixed, "Adam's beta1")
      .excluding_hi()
      .no_flag("beta1 (of --preset)")
      .real("beta2", beta2, 0, 1, OnResume::kFixed, "Adam's beta2")
      .excluding_hi()
      .no_flag("beta2 (of --preset)")
      .real("eps", eps, 0, 1, OnResume::kFixed, "Adam's eps")
      .excluding_lo()
      .no_flag("eps (of --preset)")
      .real("label_smoothing", label_smoothing, 0, 1, OnResume::kFixed, "label smoothing")
      .excluding_hi()
      .unsigned_integer("seed", seed, OnResume::kFixed, "random seed");
  loop.add_to(s);
  return s
      .integer("eval_samples", eval_samples, 1, kMaxSamples, OnResume::kMayChange,
               "sequences per evaluation")
      .integer("final_samples", final_samples, 1, kMaxSamples, OnResume::kMayChange,
               "sequences for the final evaluation");
}

void Config::validate() const {
  check_settings();
  check_bounds();
}

// What no option's bounds say alone (each option's own are the schema's: check_bounds).
void Config::check_settings() const {
  SG_CHECK(heads > 0 && d_model % heads == 0, "d_model {} is not divisible by heads {}", d_model,
           heads);
  SG_CHECK(min_len <= length, "min-len must be in [2, length={}], got {}", length, min_len);
  loop.check();
}

void Config::check_bounds() const {
  Config(*this).schema().check();
  model_options().validate();
}

std::map<std::string, std::string> Config::to_map() const {
  std::map<std::string, std::string> map = Config(*this).schema().to_map();
  map["preset"] = preset;  // a name only: the sizes it stands for are compared one by one
  return map;
}

std::vector<ConfigField> Config::fields() { return Config().schema().fields(); }

Config Config::from_map(const std::map<std::string, std::string>& values) {
  Config c = parse_map(values);
  c.validate();
  return c;
}

Config Config::parse_map(const std::map<std::string, std::string>& values) {
  const auto preset = values.find("preset");
  SG_CHECK(preset != values.end(), "checkpoint config is missing 'preset'");
  Config c = preset_named(preset->second);
  c.schema().read(values, "copy_task");
  return c;
}

}  // namespace copy_task
