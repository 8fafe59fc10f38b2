#include "config.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

namespace copy_task {

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
  SG_CHECK(eval_every >= 1 && eval_samples >= 1 && final_samples >= 1,
           "eval-every and sample counts must be positive");
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

Config Config::from_map(const std::map<std::string, std::string>& values) {
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = values.find(key);
    SG_CHECK(it != values.end(), "checkpoint config is missing '{}'", key);
    return it->second;
  };
  // Strict: the whole text is the value, or the key is named in an error (no "12abc" read as 12,
  // no "True" read as false).
  auto parse = [&](const std::string& key, auto& value, const char* kind) {
    const std::string& s = get(key);
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    SG_CHECK(ec == std::errc() && end == s.data() + s.size() && !s.empty(),
             "checkpoint config '{}' = '{}' is not {}", key, s, kind);
  };
  auto integer = [&](const std::string& key) {
    int64_t v = 0;
    parse(key, v, "an integer");
    return v;
  };
  auto real = [&](const std::string& key) {
    double v = 0;
    parse(key, v, "a number");
    return v;
  };
  auto boolean = [&](const std::string& key) {
    const std::string& s = get(key);
    SG_CHECK(s == "true" || s == "false", "checkpoint config '{}' = '{}' is not true or false", key,
             s);
    return s == "true";
  };
  Config c = preset_named(get("preset"));
  c.task = parse_task(get("task"));
  c.vocab = integer("vocab"), c.length = integer("length"), c.min_len = integer("min_len");
  c.batch = integer("batch"), c.layers = integer("layers"), c.d_model = integer("d_model");
  c.heads = integer("heads"), c.d_ff = integer("d_ff"), c.dropout = real("dropout");
  c.norm_first = boolean("norm_first");
  c.positional = get("positional");
  c.steps = integer("steps"), c.warmup = integer("warmup"), c.lr_factor = real("lr_factor");
  c.beta1 = real("beta1"), c.beta2 = real("beta2"), c.eps = real("eps");
  c.label_smoothing = real("label_smoothing");
  c.eval_every = integer("eval_every"), c.eval_samples = integer("eval_samples");
  c.final_samples = integer("final_samples"), c.checkpoint_every = integer("checkpoint_every");
  parse("seed", c.seed, "a seed in [0, 2^64)");  // the full unsigned range, as written
  c.validate();
  return c;
}

int64_t Config::min_state_values() const {
  // Each of the 2 * layers encoder and decoder layers holds two feed-forward matrices of
  // d_model x d_ff values; the two embeddings vocab x d_model; the positional tables (a buffer
  // or a parameter) max_len x d_model. Counted with overflow checks: a saturated count only
  // means "more than any file holds".
  const int64_t max = std::numeric_limits<int64_t>::max();
  int64_t total = 0;
  for (std::vector<int64_t> factors : std::vector<std::vector<int64_t>>{
           {4, layers, d_model, d_ff}, {2, vocab, d_model}, {model_options().max_len, d_model}}) {
    int64_t product = 1;
    for (int64_t f : factors) {
      if (__builtin_mul_overflow(product, f, &product)) return max;
    }
    if (__builtin_add_overflow(total, product, &total)) return max;
  }
  return total;
}

}  // namespace copy_task