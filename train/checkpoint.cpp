#include "train/checkpoint.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "nn/decoder_only_transformer.h"
#include "nn/serialize.h"

namespace sg::train {

namespace fs = std::filesystem;

int64_t Checkpoint::model_values() const {
  int64_t values = 0;
  for (const auto& [_, t] : model) values += t.numel();
  return values;
}

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer, const nn::Metadata& metadata,
                     const optim::ExponentialMovingAverage* ema) {
  nn::NamedTensors unit = model.state_dict();
  for (const auto& [name, _] : unit) {
    for (const char* prefix : {kOptimizerPrefix, kEmaPrefix}) {
      SG_CHECK(!name.starts_with(prefix),
               "save_checkpoint: the model's tensor '{}' starts with '{}', which a checkpoint "
               "keeps for the optimizer and the moving average; rename that submodule",
               name, prefix);
    }
  }
  if (optimizer) {
    for (const auto& [name, t] : optimizer->state()) unit.emplace_back(kOptimizerPrefix + name, t);
  }
  if (ema) {
    for (const auto& [name, t] : ema->state()) unit.emplace_back(kEmaPrefix + name, t);
  }
  nn::save_safetensors(path, unit, metadata);
}

Checkpoint read_checkpoint(const std::string& path) {
  SG_CHECK(fs::exists(path), "checkpoint {} does not exist", path);
  nn::SafetensorsFile file = nn::load_safetensors(path);
  Checkpoint c{path, {}, {}, std::move(file.metadata), path, {}};
  const std::string optimizer_prefix = kOptimizerPrefix, ema_prefix = kEmaPrefix;
  for (auto& [name, t] : file.tensors) {
    if (name.starts_with(optimizer_prefix)) {
      c.optimizer.emplace_back(name.substr(optimizer_prefix.size()), t);
    } else if (name.starts_with(ema_prefix)) {
      c.ema.emplace_back(name.substr(ema_prefix.size()), t);
    } else {
      c.model.emplace_back(name, t);
    }
  }
  for (const auto& [part, tensors] : {std::pair{"", &c.model}, std::pair{"ema.", &c.ema}}) {
    if (auto bad = first_non_finite(*tensors)) {
      SG_FAIL("checkpoint {}: tensor '{}{}' holds infinities or NaNs (saved from a diverged run?)",
              path, part, *bad);
    }
  }
  return c;
}

namespace {

// The sum of the products of `terms`, saturating at INT64_MAX: a saturated count only means
// "more than any file holds".
int64_t sum_of_products(std::initializer_list<std::vector<int64_t>> terms) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  int64_t total = 0;
  for (const std::vector<int64_t>& factors : terms) {
    int64_t product = 1;
    for (int64_t f : factors) {
      if (__builtin_mul_overflow(product, f, &product)) return max;
    }
    if (__builtin_add_overflow(total, product, &total)) return max;
  }
  return total;
}

void check_fits(const Checkpoint& c, int64_t needed, const std::string& config) {
  const int64_t held = c.model_values();
  SG_CHECK(needed <= held,
           "checkpoint {}: its config ({}) describes a model of at least {} values, but the file "
           "holds {}",
           c.path, config, needed, held);
}

}  // namespace

int64_t min_state_values(const nn::TransformerOptions& o) {
  // Each encoder and decoder layer holds two feed-forward matrices of d_model x d_ff values; the
  // two embeddings vocab x d_model; the positional table (a buffer or a parameter)
  // max_len x d_model.
  return sum_of_products({{2, o.num_encoder_layers + o.num_decoder_layers, o.d_model, o.d_ff},
                          {o.src_vocab, o.d_model},
                          {o.tgt_vocab, o.d_model},
                          {o.max_len, o.d_model}});
}

int64_t min_state_values(const nn::DecoderOnlyOptions& o) {
  // The same parts for one stack and one embedding.
  return sum_of_products(
      {{2, o.layers, o.d_model, o.d_ff}, {o.vocab, o.d_model}, {o.max_len, o.d_model}});
}

void check_fits(const Checkpoint& c, const nn::TransformerOptions& options) {
  check_fits(c, min_state_values(options), options.to_string());
}

void check_fits(const Checkpoint& c, const nn::DecoderOnlyOptions& options) {
  check_fits(c, min_state_values(options),
             fmt::format("vocab={};d_model={};layers={};d_ff={};max_len={}", options.vocab,
                         options.d_model, options.layers, options.d_ff, options.max_len));
}

void restore(const Checkpoint& c, nn::Module& model, optim::Optimizer* optimizer) {
  nn::load(model, c.model, c.path);
  if (optimizer) restore_optimizer(c, *optimizer);
}

void restore_optimizer(const Checkpoint& c, optim::Optimizer& optimizer) {
  SG_CHECK(!c.optimizer.empty(), "--resume: {} holds no optimizer state", c.path);
  try {
    optimizer.load_state(c.optimizer);
  } catch (const sg::Error& e) {
    SG_FAIL("--resume: the optimizer state in {} does not match: {}", c.optimizer_path, e.what());
  }
}

void restore_ema(const Checkpoint& c, optim::ExponentialMovingAverage& ema) {
  SG_CHECK(!c.ema.empty(), "--resume: {} holds no moving average of the weights", c.path);
  try {
    ema.load_state(c.ema);
  } catch (const sg::Error& e) {
    SG_FAIL("--resume: the moving average in {} does not match: {}", c.path, e.what());
  }
}

std::optional<std::string> first_non_finite(const nn::NamedTensors& tensors) {
  NoGradGuard no_grad;
  for (const auto& [name, t] : tensors) {
    if (!is_floating(t.dtype()) || t.numel() == 0) continue;
    // x * 0 is 0 for every finite x and NaN for an infinity or a NaN: one value to read back.
    // In float32 at least (bfloat16 tensors have no arithmetic of their own).
    const Tensor wide = t.dtype() == kBFloat16 ? t.to(kFloat32) : t;
    if (!std::isfinite((wide * 0.0).sum().item<double>())) return name;
  }
  return std::nullopt;
}

}  // namespace sg::train
