// The encoder: a stack of identical layers, each self-attention then a feed-forward block, each
// wrapped in a residual connection with LayerNorm. Two orders (options.norm_first):
//   post-LN (the paper):  x = norm1(x + dropout1(self_attn(x)));  x = norm2(x + dropout2(ffn(x)))
//   pre-LN  (GPT-2 on):   x = x + dropout1(self_attn(norm1(x)));  x = x + dropout2(ffn(norm2(x)))
// Pre-LN leaves the residual stream un-normalised, so the Encoder adds a final LayerNorm ("norm")
// in that order only. Dropout hits the sublayer's output before the sum, never the residual.
//   sg::nn::Encoder encoder(options);
//   auto memory = encoder(x, src_mask);   // x [B, S, D], src_mask [B, 1, 1, S] -> [B, S, D]
#pragma once

#include <memory>

#include "nn/container.h"
#include "nn/dropout.h"
#include "nn/feed_forward.h"
#include "nn/layer_norm.h"
#include "nn/multihead_attention.h"
#include "nn/transformer_options.h"

namespace sg::nn {

class EncoderLayer : public Module {
 public:
  // Reads d_model, heads, d_ff, dropout, activation, norm_first and layer_norm_eps.
  explicit EncoderLayer(const TransformerOptions& options);
  Tensor forward(const Tensor& x, const Tensor& src_mask = Tensor());  // [B, S, D] -> [B, S, D]
  Tensor operator()(const Tensor& x, const Tensor& src_mask = Tensor()) {
    return forward(x, src_mask);
  }

  bool norm_first;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<FeedForward> ffn;
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Dropout> dropout1, dropout2;

 protected:
  std::string extra_repr() const override;
};

class Encoder : public Module {
 public:
  explicit Encoder(const TransformerOptions& options);  // options.num_encoder_layers layers
  Tensor forward(const Tensor& x, const Tensor& src_mask = Tensor());
  Tensor operator()(const Tensor& x, const Tensor& src_mask = Tensor()) {
    return forward(x, src_mask);
  }

  std::shared_ptr<ModuleList> layers;  // of EncoderLayer
  std::shared_ptr<LayerNorm> norm;     // only when norm_first, else null
};

}  // namespace sg::nn
