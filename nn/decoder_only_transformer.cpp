#include "nn/decoder_only_transformer.h"

#include <cmath>

#include "nn/attention.h"
#include "nn/init.h"

namespace sg::nn {

void DecoderOnlyOptions::validate() const {
  SG_CHECK(vocab > 0, "DecoderOnlyTransformer: vocab must be positive, got {}", vocab);
  SG_CHECK(layers > 0, "DecoderOnlyTransformer: layers must be positive, got {}", layers);
  SG_CHECK(pad_idx >= 0 && pad_idx < vocab,
           "DecoderOnlyTransformer: pad_idx {} is outside the vocabulary of {}", pad_idx, vocab);
  try {
    block_options().validate();
  } catch (const Error& e) {  // "Transformer: d_model 30 is not ..." names the other class
    const std::string what = e.what();
    SG_FAIL("DecoderOnlyTransformer{}", what.substr(what.find(':')));
  }
}

TransformerOptions DecoderOnlyOptions::block_options() const {
  TransformerOptions o;
  o.src_vocab = o.tgt_vocab = vocab;
  o.d_model = d_model, o.heads = heads, o.d_ff = d_ff, o.max_len = max_len, o.pad_idx = pad_idx;
  o.num_encoder_layers = layers;
  o.num_decoder_layers = 1;  // unused: no decoder stack here
  o.dropout = dropout, o.layer_norm_eps = layer_norm_eps, o.norm_first = norm_first;
  o.activation = activation, o.positional = positional;
  return o;
}

DecoderOnlyTransformer::DecoderOnlyTransformer(DecoderOnlyOptions o)
    : Module("DecoderOnlyTransformer"), options_(std::move(o)) {
  options_.validate();
  const DecoderOnlyOptions& opt = options_;
  embed =
      register_module("embed", std::make_shared<Embedding>(opt.vocab, opt.d_model, opt.pad_idx));
  if (opt.positional == "sinusoidal") {
    pos = register_module("positional",
                          std::make_shared<SinusoidalPositionalEncoding>(opt.d_model, opt.max_len));
  } else {
    pos = register_module("pos",
                          std::make_shared<LearnedPositionalEncoding>(opt.d_model, opt.max_len));
  }
  dropout = register_module("dropout", std::make_shared<Dropout>(opt.dropout));
  blocks = register_module("blocks", std::make_shared<Encoder>(opt.block_options()));
  generator = register_module("generator", std::make_shared<Linear>(opt.d_model, opt.vocab));
  // As the Transformer's: Glorot init for every matrix, the padding row back to zero.
  for (auto& [name, p] : named_parameters()) {
    if (p.dim() > 1) init::xavier_uniform_(p);
  }
  NoGradGuard no_grad;
  embed->weight.select(0, opt.pad_idx).zero_();
}

Tensor DecoderOnlyTransformer::forward(const Tensor& tokens) {
  SG_CHECK(tokens.dtype() == kInt64 && tokens.dim() == 2,
           "DecoderOnlyTransformer: expected tokens as int64 [B, T], got {} of shape {}",
           tokens.dtype(), tokens.shape());
  const double scale = std::sqrt(static_cast<double>(options_.d_model));
  Tensor x = dropout->forward(pos->forward(embed->forward(tokens) * scale, 0));
  // The causal mask alone: padding comes only after a sequence's end, where a causal query never
  // looks, and the loss ignores the positions it fills.
  return generator->forward(blocks->forward(x, make_causal_mask(tokens.size(1), tokens.device())));
}

namespace {

// Each step runs every row's whole prefix and keeps the last position's logits.
class PrefixState : public DecodingState {
 public:
  PrefixState(DecoderOnlyTransformer& model, int64_t rows) : model_(model), prefixes_(rows) {}

  Tensor step(const std::vector<int64_t>& tokens) override {
    const Tensor prefix = prefixes_.append(tokens, model_.generator->weight.device());
    const int64_t T = prefix.size(1);
    SG_CHECK(T <= model_.options().max_len,
             "DecoderOnlyTransformer generation: {} tokens exceed max_len {}", T,
             model_.options().max_len);
    return model_.forward(prefix).select(1, T - 1);
  }

  void reorder(const std::vector<int64_t>& rows) override { prefixes_.reorder(rows); }

 private:
  DecoderOnlyTransformer& model_;
  Prefixes prefixes_;
};

}  // namespace

std::unique_ptr<DecodingState> DecoderOnlyTransformer::start_generation(int64_t rows,
                                                                        bool /*use_cache*/) {
  return std::make_unique<PrefixState>(*this, rows);
}

std::string DecoderOnlyTransformer::extra_repr() const {
  const DecoderOnlyOptions& o = options_;
  return fmt::format(
      "vocab={}, d_model={}, heads={}, layers={}, d_ff={}, max_len={}, "
      "norm_first={}, activation={}, positional={}",
      o.vocab, o.d_model, o.heads, o.layers, o.d_ff, o.max_len, o.norm_first, o.activation,
      o.positional);
}

}  // namespace sg::nn
