#include "nn/transformer_decoder.h"

namespace sg::nn {

DecoderLayer::DecoderLayer(const TransformerOptions& o)
    : Module("DecoderLayer"), norm_first(o.norm_first) {
  auto attention = [&] {
    return std::make_shared<MultiheadAttention>(o.d_model, o.heads, o.dropout);
  };
  auto layer_norm = [&] { return std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps); };
  self_attn = register_module("self_attn", attention());
  cross_attn = register_module("cross_attn", attention());
  ffn = register_module("ffn",
                        std::make_shared<FeedForward>(o.d_model, o.d_ff, o.dropout, o.activation));
  norm1 = register_module("norm1", layer_norm());
  norm2 = register_module("norm2", layer_norm());
  norm3 = register_module("norm3", layer_norm());
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(o.dropout));
}

Tensor DecoderLayer::forward(const Tensor& x, const Tensor& memory, const Tensor& tgt_mask,
                             const Tensor& memory_mask) {
  return call_forward_hooks(run(
      x, [&](const Tensor& h) { return self_attn->forward(h, h, h, tgt_mask); },
      // Queries come from the target; keys and values from the encoder output (S != T is fine).
      [&](const Tensor& h) { return cross_attn->forward(h, memory, memory, memory_mask); }));
}

Tensor DecoderLayer::step(const Tensor& x, LayerCache& cache, const Tensor& memory_mask) {
  return run(
      x,
      [&](const Tensor& h) {
        // Append the new positions' keys and values, then let the new queries look at every
        // position so far (and, among themselves, only backwards).
        const int64_t past = cache.self_k.length();
        cache.self_k.append(self_attn->project_keys(h));  // as cat({self_k, k}, 2)
        cache.self_v.append(self_attn->project_values(h));
        const int64_t n = h.size(1);
        // One new position may look at every position so far: no mask to build or apply.
        Tensor mask = n == 1 ? Tensor() : make_causal_mask(past + n, h.device()).narrow(2, past, n);
        return self_attn->attend(h, cache.self_k.tensor(), cache.self_v.tensor(), mask);
      },
      [&](const Tensor& h) {
        return cross_attn->attend(h, cache.cross_k.tensor(), cache.cross_v.tensor(), memory_mask);
      });
}

Tensor DecoderLayer::run(const Tensor& x, const Attend& attend_self, const Attend& attend_memory) {
  // --8<-- [start:ex11.decoder_layer]
  auto self_block = [&](const Tensor& h) {
    AttentionOutput a = attend_self(h);
    last_self_attention = a.weights.detach();
    return dropout1->forward(a.output);
  };
  auto memory_block = [&](const Tensor& h) {
    AttentionOutput a = attend_memory(h);
    last_cross_attention = a.weights.detach();
    return dropout2->forward(a.output);
  };
  auto feed = [&](const Tensor& h) { return dropout3->forward(ffn->forward(h)); };
  if (norm_first) {
    Tensor h = x + self_block(norm1->forward(x));
    h = h + memory_block(norm2->forward(h));
    return h + feed(norm3->forward(h));
  }
  Tensor h = norm1->forward(x + self_block(x));
  h = norm2->forward(h + memory_block(h));
  return norm3->forward(h + feed(h));
  // --8<-- [end:ex11.decoder_layer]
}

std::string DecoderLayer::extra_repr() const { return fmt::format("norm_first={}", norm_first); }

Decoder::Decoder(const TransformerOptions& o) : Module("Decoder") {
  SG_CHECK(o.num_decoder_layers > 0, "Decoder: num_decoder_layers must be positive, got {}",
           o.num_decoder_layers);
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < o.num_decoder_layers; ++i)
    layers->push_back(std::make_shared<DecoderLayer>(o));
  if (o.norm_first)
    norm = register_module("norm", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps));
}

DecoderCache Decoder::start(const Tensor& memory, const Tensor& memory_mask) {
  DecoderCache cache;
  cache.memory_mask = memory_mask;
  for (size_t i = 0; i < layers->size(); ++i) {
    auto& attn = layers->at<DecoderLayer>(i)->cross_attn;
    // Copied out of the projections' rows once: every step reads them whole.
    LayerCache layer;
    layer.cross_k.append(attn->project_keys(memory));
    layer.cross_v.append(attn->project_values(memory));
    cache.layers.push_back(std::move(layer));
  }
  return cache;
}

void DecoderCache::reorder(const Tensor& index) {
  for (LayerCache& layer : layers) {
    for (KVBuffer* t : {&layer.self_k, &layer.self_v, &layer.cross_k, &layer.cross_v})
      t->reorder(index);
  }
  if (memory_mask.defined()) memory_mask = memory_mask.index_select(0, index);
}

Tensor Decoder::step(const Tensor& x, DecoderCache& cache) {
  SG_CHECK(cache.layers.size() == layers->size(),
           "Decoder: the cache has {} layers but the decoder has {} (use Decoder::start)",
           cache.layers.size(), layers->size());
  Tensor h = x;
  for (size_t i = 0; i < layers->size(); ++i)
    h = layers->at<DecoderLayer>(i)->step(h, cache.layers[i], cache.memory_mask);
  cache.length += x.size(1);
  return norm ? norm->forward(h) : h;
}

Tensor Decoder::forward(const Tensor& x, const Tensor& memory, const Tensor& tgt_mask,
                        const Tensor& memory_mask) {
  Tensor h = x;
  for (size_t i = 0; i < layers->size(); ++i)
    h = layers->at<DecoderLayer>(i)->forward(h, memory, tgt_mask, memory_mask);
  return call_forward_hooks(norm ? norm->forward(h) : h);
}

}  // namespace sg::nn
