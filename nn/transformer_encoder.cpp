#include "nn/transformer_encoder.h"

namespace sg::nn {

EncoderLayer::EncoderLayer(const TransformerOptions& o)
    : Module("EncoderLayer"), norm_first(o.norm_first) {
  self_attn = register_module("self_attn",
                              std::make_shared<MultiheadAttention>(o.d_model, o.heads, o.dropout));
  ffn = register_module("ffn",
                        std::make_shared<FeedForward>(o.d_model, o.d_ff, o.dropout, o.activation));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
}

Tensor EncoderLayer::forward(const Tensor& x, const Tensor& src_mask) {
  auto attend = [&](const Tensor& h) {
    return dropout1->forward(self_attn->forward(h, h, h, src_mask).output);
  };
  auto feed = [&](const Tensor& h) { return dropout2->forward(ffn->forward(h)); };
  if (norm_first) {
    Tensor h = x + attend(norm1->forward(x));
    return call_forward_hooks(h + feed(norm2->forward(h)));
  }
  Tensor h = norm1->forward(x + attend(x));
  return call_forward_hooks(norm2->forward(h + feed(h)));
}

std::string EncoderLayer::extra_repr() const { return fmt::format("norm_first={}", norm_first); }

Encoder::Encoder(const TransformerOptions& o) : Module("Encoder") {
  SG_CHECK(o.num_encoder_layers > 0, "Encoder: num_encoder_layers must be positive, got {}",
           o.num_encoder_layers);
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < o.num_encoder_layers; ++i)
    layers->push_back(std::make_shared<EncoderLayer>(o));
  if (o.norm_first)
    norm = register_module("norm", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps));
}

Tensor Encoder::forward(const Tensor& x, const Tensor& src_mask) {
  Tensor h = x;
  for (size_t i = 0; i < layers->size(); ++i) h = layers->at<EncoderLayer>(i)->forward(h, src_mask);
  return call_forward_hooks(norm ? norm->forward(h) : h);
}

}  // namespace sg::nn
