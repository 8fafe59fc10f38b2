// The decoder: a stack of layers, each masked self-attention over the target so far, then
// cross-attention (queries from the target, keys and values from the encoder's memory), then a
// feed-forward block; each in a residual connection with LayerNorm, post-LN or pre-LN exactly as
// in nn/transformer_encoder.h, with a final "norm" in pre-LN only.
//   sg::nn::Decoder decoder(options);
//   auto y = decoder(x, memory, tgt_mask, src_mask);   // x [B, T, D], memory [B, S, D] -> [B, T,
//   D]
// tgt_mask: causal (and target padding), [B or 1, 1, T, T]; memory_mask: source padding
// [B, 1, 1, S].
//
// Generating one token at a time, step() feeds only the new positions through each layer and
// keeps the projected keys and values of the earlier ones in a DecoderCache: the same result as
// forward() on the whole prefix with a causal mask, at O(T) instead of O(T²) work per step.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "nn/container.h"
#include "nn/dropout.h"
#include "nn/feed_forward.h"
#include "nn/kv_buffer.h"
#include "nn/layer_norm.h"
#include "nn/multihead_attention.h"
#include "nn/transformer_options.h"

namespace sg::nn {

// Keys and values projected once and reused: [B, H, L, Dh] each (tensor()). Keys by columns,
// values in rows: the layouts the attention kernels read fastest (nn/kv_buffer.h).
struct LayerCache {
  // Of the L target positions decoded so far (grows every step).
  KVBuffer self_k{KVBuffer::Layout::Columns}, self_v{KVBuffer::Layout::Rows};
  // Of the memory (fixed: appended once, by Decoder::start).
  KVBuffer cross_k{KVBuffer::Layout::Columns}, cross_v{KVBuffer::Layout::Rows};
};
struct DecoderCache {
  std::vector<LayerCache> layers;
  Tensor memory_mask;  // [B, 1, 1, S] or undefined
  int64_t length = 0;  // target positions decoded so far: the next position is `length`

  // Row i of the batch becomes the old row index[i] in every cached tensor (beam search keeps
  // the rows of the hypotheses it extends; the number of rows may change).
  void reorder(const Tensor& index);
};

class DecoderLayer : public Module {
 public:
  // Reads d_model, heads, d_ff, dropout, activation, norm_first and layer_norm_eps.
  explicit DecoderLayer(const TransformerOptions& options);
  Tensor forward(const Tensor& x, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                 const Tensor& memory_mask = Tensor());
  Tensor operator()(const Tensor& x, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                    const Tensor& memory_mask = Tensor()) {
    return forward(x, memory, tgt_mask, memory_mask);
  }

  // x [B, n, D]: the next n target positions; appends their keys and values to `cache`.
  Tensor step(const Tensor& x, LayerCache& cache, const Tensor& memory_mask);

  bool norm_first;
  std::shared_ptr<MultiheadAttention> self_attn, cross_attn;
  std::shared_ptr<FeedForward> ffn;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
  std::shared_ptr<Dropout> dropout1, dropout2, dropout3;
  // The attention weights of the last forward, detached, for visualisation:
  // self [B, H, T, T], cross [B, H, T, S].
  Tensor last_self_attention, last_cross_attention;

 protected:
  std::string extra_repr() const override;

 private:
  using Attend = std::function<AttentionOutput(const Tensor&)>;
  // The layer's body, given how to self-attend and how to attend to the memory.
  Tensor run(const Tensor& x, const Attend& attend_self, const Attend& attend_memory);
};

class Decoder : public Module {
 public:
  explicit Decoder(const TransformerOptions& options);  // options.num_decoder_layers layers
  Tensor forward(const Tensor& x, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                 const Tensor& memory_mask = Tensor());
  Tensor operator()(const Tensor& x, const Tensor& memory, const Tensor& tgt_mask = Tensor(),
                    const Tensor& memory_mask = Tensor()) {
    return forward(x, memory, tgt_mask, memory_mask);
  }

  // Projects the memory's keys and values for every layer's cross-attention, once.
  DecoderCache start(const Tensor& memory, const Tensor& memory_mask = Tensor());
  // x [B, n, D] at positions cache.length .. cache.length + n - 1 -> [B, n, D]; advances the cache.
  Tensor step(const Tensor& x, DecoderCache& cache);

  std::shared_ptr<ModuleList> layers;  // of DecoderLayer
  std::shared_ptr<LayerNorm> norm;     // only when norm_first, else null
};

}  // namespace sg::nn
