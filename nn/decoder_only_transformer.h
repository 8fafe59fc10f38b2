// A decoder-only Transformer (GPT's shape): a language model that predicts each next token from
// the ones before it. It is the encoder's stack of chapter 11 with one change, a causal mask, so
// that position t attends to positions 0..t only; there is no source and no cross-attention. The
// blocks are pre-LN by default (GPT-2 on), with a final LayerNorm before the generator.
//
//   sg::nn::DecoderOnlyTransformer lm({.vocab = 30, .d_model = 128, .heads = 4, .layers = 4});
//   Tensor logits = lm(tokens);              // tokens [B, T] -> logits [B, T, vocab]
//   auto words = sg::nn::sample(lm, 10, {.bos = 1, .eos = 2}, {.temperature = 0.8, .top_k = 10});
#pragma once

#include <memory>
#include <string>

#include "nn/embedding.h"
#include "nn/generation.h"
#include "nn/linear.h"
#include "nn/positional_encoding.h"
#include "nn/transformer_encoder.h"
#include "nn/transformer_options.h"

namespace sg::nn {

struct DecoderOnlyOptions {
  int64_t vocab = 0;  // must be set
  int64_t d_model = 128, heads = 4, layers = 4, d_ff = 512;
  int64_t max_len = 64;  // the longest sequence the positions cover
  int64_t pad_idx = 0;   // its embedding row stays zero; generation never produces it
  double dropout = 0.1;
  double layer_norm_eps = 1e-5;
  bool norm_first = true;              // pre-LN; false: post-LN, as the 2017 paper
  std::string activation = "gelu";     // or "relu"
  std::string positional = "learned";  // or "sinusoidal"

  // Throws sg::Error naming the first bad field ("DecoderOnlyTransformer: ...").
  void validate() const;
  // The options each block reads (an encoder layer's: d_model, heads, d_ff, ...).
  TransformerOptions block_options() const;
};

class DecoderOnlyTransformer : public Module, public LanguageModel {
 public:
  explicit DecoderOnlyTransformer(DecoderOnlyOptions options);

  // tokens [B, T] int64 -> logits [B, T, vocab]; position t sees tokens 0..t.
  Tensor forward(const Tensor& tokens);
  Tensor operator()(const Tensor& tokens) { return forward(tokens); }

  // Generation recomputes each row's whole prefix at every step (no key-value cache; use_cache is
  // ignored): short sequences, such as words, cost little either way.
  std::unique_ptr<DecodingState> start_generation(int64_t rows, bool use_cache) override;

  const DecoderOnlyOptions& options() const { return options_; }

  std::shared_ptr<Embedding> embed;
  std::shared_ptr<PositionalEncoding> pos;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Encoder> blocks;  // the encoder's stack, run with a causal mask
  std::shared_ptr<Linear> generator;

 protected:
  std::string extra_repr() const override;

 private:
  DecoderOnlyOptions options_;
};

}  // namespace sg::nn
