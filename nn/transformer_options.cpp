#include "nn/transformer_options.h"

#include <optional>
#include <string_view>

#include "autograd/error.h"
#include "nn/parse_number.h"

namespace sg::nn {

void TransformerOptions::validate() const {
  SG_CHECK(src_vocab > 0 && tgt_vocab > 0,
           "Transformer: src_vocab and tgt_vocab must be positive, got {} and {}", src_vocab,
           tgt_vocab);
  SG_CHECK(d_model > 0 && heads > 0,
           "Transformer: d_model and heads must be positive, got {} and {}", d_model, heads);
  SG_CHECK(d_model % heads == 0, "Transformer: d_model {} is not divisible by heads {}", d_model,
           heads);
  SG_CHECK(num_encoder_layers > 0 && num_decoder_layers > 0,
           "Transformer: num_encoder_layers and num_decoder_layers must be positive, got {} and {}",
           num_encoder_layers, num_decoder_layers);
  SG_CHECK(d_ff > 0, "Transformer: d_ff must be positive, got {}", d_ff);
  SG_CHECK(max_len > 0, "Transformer: max_len must be positive, got {}", max_len);
  SG_CHECK(pad_idx >= 0 && pad_idx < src_vocab && pad_idx < tgt_vocab,
           "Transformer: pad_idx {} is outside the vocabularies (src_vocab {}, tgt_vocab {})",
           pad_idx, src_vocab, tgt_vocab);
  SG_CHECK(dropout >= 0.0 && dropout < 1.0, "Transformer: dropout must be in [0, 1), got {}",
           dropout);
  SG_CHECK(layer_norm_eps > 0.0, "Transformer: layer_norm_eps must be positive, got {}",
           layer_norm_eps);
  SG_CHECK(activation == "relu" || activation == "gelu",
           "Transformer: activation must be \"relu\" or \"gelu\", got \"{}\"", activation);
  SG_CHECK(positional == "sinusoidal" || positional == "learned",
           "Transformer: positional must be \"sinusoidal\" or \"learned\", got \"{}\"", positional);
}

std::string TransformerOptions::to_string() const {
  // {} prints doubles in the shortest form that reads back to the same value.
  return fmt::format(
      "src_vocab={};tgt_vocab={};d_model={};heads={};num_encoder_layers={};"
      "num_decoder_layers={};d_ff={};max_len={};pad_idx={};dropout={};layer_norm_eps={};"
      "norm_first={};activation={};positional={}",
      src_vocab, tgt_vocab, d_model, heads, num_encoder_layers, num_decoder_layers, d_ff, max_len,
      pad_idx, dropout, layer_norm_eps, norm_first ? "true" : "false", activation, positional);
}

namespace {

template <typename T>
T parse_number(std::string_view key, std::string_view value) {
  const std::optional<T> out = nn::parse_number<T>(value);
  SG_CHECK(out.has_value(), "TransformerOptions::parse: '{}' is not a valid value for {}", value,
           key);
  return *out;
}

bool parse_bool(std::string_view key, std::string_view value) {
  SG_CHECK(value == "true" || value == "false",
           "TransformerOptions::parse: '{}' is not a valid value for {} (true or false)", value,
           key);
  return value == "true";
}

void set_field(TransformerOptions& o, std::string_view key, std::string_view value) {
  auto integer = [&] { return parse_number<int64_t>(key, value); };
  if (key == "src_vocab")
    o.src_vocab = integer();
  else if (key == "tgt_vocab")
    o.tgt_vocab = integer();
  else if (key == "d_model")
    o.d_model = integer();
  else if (key == "heads")
    o.heads = integer();
  else if (key == "num_encoder_layers")
    o.num_encoder_layers = integer();
  else if (key == "num_decoder_layers")
    o.num_decoder_layers = integer();
  else if (key == "d_ff")
    o.d_ff = integer();
  else if (key == "max_len")
    o.max_len = integer();
  else if (key == "pad_idx")
    o.pad_idx = integer();
  else if (key == "dropout")
    o.dropout = parse_number<double>(key, value);
  else if (key == "layer_norm_eps")
    o.layer_norm_eps = parse_number<double>(key, value);
  else if (key == "norm_first")
    o.norm_first = parse_bool(key, value);
  else if (key == "activation")
    o.activation = std::string(value);
  else if (key == "positional")
    o.positional = std::string(value);
  else
    SG_FAIL("TransformerOptions::parse: unknown key '{}'", key);
}

}  // namespace

TransformerOptions TransformerOptions::parse(const std::string& text) {
  TransformerOptions o;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t semicolon = rest.find(';');
    std::string_view item = rest.substr(0, semicolon);
    rest = semicolon == std::string_view::npos ? std::string_view() : rest.substr(semicolon + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    SG_CHECK(eq != std::string_view::npos,
             "TransformerOptions::parse: expected key=value, got '{}'", item);
    set_field(o, item.substr(0, eq), item.substr(eq + 1));
  }
  return o;
}

}  // namespace sg::nn
