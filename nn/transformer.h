// The encoder-decoder Transformer of "Attention Is All You Need": embed the source, encode it
// into a memory, embed the target, decode it against the memory, project to target-vocabulary
// logits. Training uses teacher forcing: tgt is the target shifted right (it starts with BOS),
// and the causal mask keeps position t from seeing t+1 onwards.
//   sg::nn::TransformerOptions o;
//   o.src_vocab = o.tgt_vocab = 1000;
//   sg::nn::Transformer model(o);
//   auto logits = model(src, tgt_in);   // src [B, S], tgt_in [B, T] int64 -> [B, T, 1000]
//   auto loss = sg::cross_entropy(logits, tgt_out, /*ignore_index=*/o.pad_idx);
//
// Parameters are named like PyTorch's: src_embed.weight, encoder.layers.0.self_attn.w_q.weight,
// decoder.layers.1.cross_attn.w_o.bias, generator.weight. Initialisation: xavier_uniform_ on
// every parameter with dim > 1 (as The Annotated Transformer and torch.nn.Transformer do), then
// the pad_idx rows of the two embeddings are zeroed again; biases keep Linear's default and
// LayerNorms start at weight 1, bias 0.
#pragma once

#include <memory>

#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/generation.h"
#include "nn/linear.h"
#include "nn/positional_encoding.h"
#include "nn/transformer_decoder.h"
#include "nn/transformer_encoder.h"
#include "nn/transformer_options.h"

namespace sg::nn {

class Transformer : public Module, public Seq2SeqModel {
 public:
  explicit Transformer(TransformerOptions options);

  // src [B, S] int64 -> memory [B, S, D]. src_mask: [B, 1, 1, S], true = real token.
  Tensor encode(const Tensor& src, const Tensor& src_mask);
  // tgt [B, T] int64 -> logits [B, T, tgt_vocab]. `start`: the position of tgt's first token.
  Tensor decode(const Tensor& tgt, const Tensor& memory, const Tensor& src_mask,
                const Tensor& tgt_mask, int64_t start = 0);
  // Builds the masks from pad_idx (padding for both, plus causal for the target), then
  // encode and decode: -> logits [B, T, tgt_vocab].
  Tensor forward(const Tensor& src, const Tensor& tgt);
  Tensor operator()(const Tensor& src, const Tensor& tgt) { return forward(src, tgt); }

  // Incremental decoding with a key/value cache (nn/transformer_decoder.h):
  //   auto cache = model.start_decoding(memory, src_mask);
  //   auto logits = model.decode_step(next_tokens, cache);   // [B, n] -> [B, n, tgt_vocab]
  // gives the logits decode() gives for those positions of the whole prefix. Target padding is
  // not masked here (generated tokens are never padding).
  DecoderCache start_decoding(const Tensor& memory, const Tensor& src_mask);
  Tensor decode_step(const Tensor& tgt, DecoderCache& cache);

  // Seq2SeqModel (nn/generation.h): greedy_search, beam_search and sample work on a Transformer.
  // With use_cache the state holds a DecoderCache; without, the prefixes
  // (nn/transformer_generation.cpp).
  std::unique_ptr<DecodingState> start_generation(const Tensor& src, bool use_cache) override;

  // The inputs of the stacks: embedding · √d_model + positional encoding, then dropout.
  Tensor embed_source(const Tensor& src);
  Tensor embed_target(const Tensor& tgt, int64_t start = 0);
  // [B, 1, 1, S]: source padding. [B, 1, T, T]: target padding AND causal.
  Tensor source_mask(const Tensor& src) const;
  Tensor target_mask(const Tensor& tgt) const;

  const TransformerOptions& options() const { return options_; }

  std::shared_ptr<Embedding> src_embed, tgt_embed;
  // The same module twice for "sinusoidal" (registered once, as "positional"); two learned
  // tables ("src_pos", "tgt_pos") for "learned".
  std::shared_ptr<PositionalEncoding> src_pos, tgt_pos;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Encoder> encoder;
  std::shared_ptr<Decoder> decoder;
  std::shared_ptr<Linear> generator;  // d_model -> tgt_vocab

 protected:
  std::string extra_repr() const override;

 private:
  void check_tokens(const char* what, const Tensor& tokens) const;
  TransformerOptions options_;
};

}  // namespace sg::nn
