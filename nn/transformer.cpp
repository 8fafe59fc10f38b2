#include "nn/transformer.h"

#include <cmath>

#include "nn/init.h"

namespace sg::nn {

Transformer::Transformer(TransformerOptions o) : Module("Transformer"), options_(std::move(o)) {
  const TransformerOptions& opt = options_;
  opt.validate();
  src_embed = register_module("src_embed",
                              std::make_shared<Embedding>(opt.src_vocab, opt.d_model, opt.pad_idx));
  tgt_embed = register_module("tgt_embed",
                              std::make_shared<Embedding>(opt.tgt_vocab, opt.d_model, opt.pad_idx));
  if (opt.positional == "sinusoidal") {
    src_pos = tgt_pos = register_module(
        "positional", std::make_shared<SinusoidalPositionalEncoding>(opt.d_model, opt.max_len));
  } else {
    src_pos = register_module(
        "src_pos", std::make_shared<LearnedPositionalEncoding>(opt.d_model, opt.max_len));
    tgt_pos = register_module(
        "tgt_pos", std::make_shared<LearnedPositionalEncoding>(opt.d_model, opt.max_len));
  }
  dropout = register_module("dropout", std::make_shared<Dropout>(opt.dropout));
  encoder = register_module("encoder", std::make_shared<Encoder>(opt));
  decoder = register_module("decoder", std::make_shared<Decoder>(opt));
  generator = register_module("generator", std::make_shared<Linear>(opt.d_model, opt.tgt_vocab));

  // Glorot init keeps activations and gradients at a similar scale through the many [D, D]
  // projections; it also overwrites the embeddings' N(0, 1), whose padding rows go back to 0.
  for (auto& [name, p] : named_parameters()) {
    if (p.dim() > 1) init::xavier_uniform_(p);
  }
  NoGradGuard no_grad;
  src_embed->weight.select(0, opt.pad_idx).zero_();
  tgt_embed->weight.select(0, opt.pad_idx).zero_();
}

void Transformer::check_tokens(const char* what, const Tensor& tokens) const {
  SG_CHECK(tokens.dtype() == kInt64 && tokens.dim() == 2,
           "Transformer: expected {} tokens as int64 [B, L], got {} of shape {}", what,
           tokens.dtype(), tokens.shape());
}

Tensor Transformer::embed_source(const Tensor& src) {
  check_tokens("source", src);
  // Scaling by √d_model puts the embeddings (xavier-sized, ~1/√d_model per entry) on the scale
  // of the positional encoding (entries in [-1, 1]).
  const double scale = std::sqrt(static_cast<double>(options_.d_model));
  return dropout->forward(src_pos->forward(src_embed->forward(src) * scale, 0));
}

Tensor Transformer::embed_target(const Tensor& tgt, int64_t start) {
  check_tokens("target", tgt);
  const double scale = std::sqrt(static_cast<double>(options_.d_model));
  // The positional encoding is indexed by position (start, start+1, ...), never by token id.
  return dropout->forward(tgt_pos->forward(tgt_embed->forward(tgt) * scale, start));
}

Tensor Transformer::source_mask(const Tensor& src) const {
  check_tokens("source", src);
  return make_padding_mask(src, options_.pad_idx);
}

Tensor Transformer::target_mask(const Tensor& tgt) const {
  // --8<-- [start:ex12.target_mask]
  check_tokens("target", tgt);
  // Query t may look at key j when j <= t AND token j is not padding: [B, 1, 1, T] & [1, 1, T, T].
  return logical_and(make_padding_mask(tgt, options_.pad_idx),
                     make_causal_mask(tgt.size(1), tgt.device()));
  // --8<-- [end:ex12.target_mask]
}

Tensor Transformer::encode(const Tensor& src, const Tensor& src_mask) {
  return encoder->forward(embed_source(src), src_mask);
}

Tensor Transformer::decode(const Tensor& tgt, const Tensor& memory, const Tensor& src_mask,
                           const Tensor& tgt_mask, int64_t start) {
  check_tokens("target", tgt);
  SG_CHECK(memory.dim() == 3 && memory.size(0) == tgt.size(0),
           "Transformer: memory of shape {} does not match target of shape {} (expected [{}, S, "
           "{}])",
           memory.shape(), tgt.shape(), tgt.size(0), options_.d_model);
  Tensor h = decoder->forward(embed_target(tgt, start), memory, tgt_mask, src_mask);
  return generator->forward(h);
}

DecoderCache Transformer::start_decoding(const Tensor& memory, const Tensor& src_mask) {
  return decoder->start(memory, src_mask);
}

Tensor Transformer::decode_step(const Tensor& tgt, DecoderCache& cache) {
  Tensor x = embed_target(tgt, cache.length);  // positions length .. length + n - 1
  return generator->forward(decoder->step(x, cache));
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt) {
  check_tokens("source", src);
  check_tokens("target", tgt);
  SG_CHECK(src.size(0) == tgt.size(0),
           "Transformer: source of shape {} and target of shape {} have different batch sizes",
           src.shape(), tgt.shape());
  Tensor src_mask = source_mask(src);
  Tensor memory = encode(src, src_mask);
  return call_forward_hooks(decode(tgt, memory, src_mask, target_mask(tgt)));
}

std::string Transformer::extra_repr() const { return options_.to_string(); }

}  // namespace sg::nn
