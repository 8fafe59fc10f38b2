// TransformerOptions: every size and switch of an encoder-decoder Transformer, with a plain-text
// form that checkpoints keep in their metadata.
//   sg::nn::TransformerOptions o;
//   o.src_vocab = o.tgt_vocab = 1000;  o.d_model = 256;  o.heads = 4;  o.norm_first = true;
//   o.validate();                          // throws "Transformer: ..." on a bad combination
//   auto text = o.to_string();             // "src_vocab=1000;tgt_vocab=1000;d_model=256;..."
//   auto back = sg::nn::TransformerOptions::parse(text);
#pragma once

#include <cstdint>
#include <string>

namespace sg::nn {

struct TransformerOptions {
  int64_t src_vocab = 0, tgt_vocab = 0;  // must be set
  int64_t d_model = 512, heads = 8;
  int64_t num_encoder_layers = 6, num_decoder_layers = 6;
  int64_t d_ff = 2048;
  int64_t max_len = 5000;  // the longest sequence the positional encoding covers
  int64_t pad_idx = 0;     // the padding token, in both vocabularies
  double dropout = 0.1;
  double layer_norm_eps = 1e-5;
  bool norm_first = false;                // false: post-LN (the paper); true: pre-LN
  std::string activation = "relu";        // or "gelu"
  std::string positional = "sinusoidal";  // or "learned"

  // Throws sg::Error naming the first bad field, e.g.
  // "Transformer: d_model 30 is not divisible by heads 4".
  void validate() const;
  // "key=value;key=value;..." with every field, in declaration order; parse() reads it back
  // (fields not named keep their defaults; unknown keys and malformed values are errors).
  std::string to_string() const;
  static TransformerOptions parse(const std::string& text);

  bool operator==(const TransformerOptions&) const = default;
};

}  // namespace sg::nn
