#include "config.h"

namespace g2p {

using sg::data::Vocabulary;

sg::train::OptionSchema Config::schema() {
  using sg::train::OnResume;
  sg::train::OptionSchema s;
  s.integer("d_model", d_model, 1, kMaxDModel, OnResume::kFixedModel, "model width")
      .integer("heads", heads, 1, kMaxHeads, OnResume::kFixedModel, "attention heads")
      .integer("layers", layers, 1, kMaxLayers, OnResume::kFixedModel, "encoder and decoder layers")
      .integer("d_ff", d_ff, 1, kMaxFfn, OnResume::kFixedModel, "feed-forward width")
      .flag("--ffn")
      .real("dropout", dropout, 0, 1, OnResume::kFixedModel, "dropout probability")
      .excluding_hi()
      .boolean("norm_first", norm_first, OnResume::kFixedModel,
               "layer norm before each sublayer (pre-LN) instead of after (post-LN)")
      .before_it_existed("false")
      .real("label_smoothing", label_smoothing, 0, 1, OnResume::kFixed, "label smoothing")
      .excluding_hi()
      .real("lr_factor", lr_factor, 0, 1e30, OnResume::kFixed, "factor of --schedule noam")
      .excluding_lo()
      .integer("warmup", warmup, 1, kMaxSteps, OnResume::kFixed, "warm-up steps")
      .text("schedule", schedule, OnResume::kFixed,
            "noam (the paper's) or cosine (warm-up, then down to 0 at --steps)")
      .one_of({"noam", "cosine"})
      .before_it_existed("noam")
      .real("lr", lr, 0, 1e30, OnResume::kFixed, "peak learning rate of --schedule cosine")
      .before_it_existed("0")
      .integer("max_tokens", max_tokens, kMinTokens, kMaxTokens, OnResume::kFixed,
               "padded tokens per batch")
      .unsigned_integer("seed", seed, OnResume::kFixed, "random seed");
  loop.add_to(s, {.moving_average = true, .checkpoint_averaging = true});
  s.integer("dev_words", dev_words, 0, kMaxSteps, OnResume::kMayChange,
            "dev words per evaluation (0 = all)")
      // Other words are another run; a resume also checks the dictionary's contents (Trainer).
      .integer("train_words", train_words, 0, kMaxSteps, OnResume::kFixed,
               "use only the first N training words (0 = all)");
  return s;
}

void Config::validate() const {
  Config(*this).schema().check();  // every bound, as a flag and a checkpoint have them
  SG_CHECK(d_model % heads == 0, "g2p: --d-model {} must be a positive multiple of --heads {}",
           d_model, heads);
  SG_CHECK(schedule != "cosine" || (lr > 0 && warmup < loop.steps),
           "g2p: --schedule cosine needs --lr > 0 (got {}) and --warmup {} below --steps {}", lr,
           warmup, loop.steps);
  loop.check();
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
  return std::make_unique<sg::optim::WarmupCosineLR>(opt, warmup, loop.steps);
}

std::map<std::string, std::string> Config::to_map() const {
  return Config(*this).schema().to_map();
}

std::vector<sg::train::ConfigField> Config::fields() { return Config().schema().fields(); }

Config Config::from_map(const std::map<std::string, std::string>& values) {
  Config c;
  c.schema().read(values, "g2p");
  c.validate();
  return c;
}

}  // namespace g2p
