#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "nn/init.h"
#include "nn/transformer.h"
#include "tests/nn/golden_parameters.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::expect_parameter_gradients_match;
using sg::testing::golden;
using sg::testing::load_golden_parameters;
using sg::testing::parameter_names;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;

// The tiny model of the gradchecks: d_model 8, 2 heads, 1 + 1 layers, vocabularies of 5.
TransformerOptions tiny_options(bool norm_first = false, std::string positional = "sinusoidal") {
  TransformerOptions o;
  o.src_vocab = o.tgt_vocab = 5;
  o.d_model = 8;
  o.heads = 2;
  o.num_encoder_layers = o.num_decoder_layers = 1;
  o.d_ff = 16;
  o.max_len = 8;
  o.dropout = 0.0;
  o.norm_first = norm_first;
  o.positional = std::move(positional);
  return o;
}

Tensor tokens(const std::vector<int64_t>& values, int64_t rows) {
  return from_vector<int64_t>(values, {rows, static_cast<int64_t>(values.size()) / rows});
}

// Mean cross-entropy over the target positions that are not padding, from primitives.
Tensor masked_cross_entropy(const Tensor& logits, const Tensor& target, int64_t pad) {
  Tensor log_probs = logits.log_softmax(-1);
  Tensor picked = log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1);  // [B, T]
  Tensor real = target.ne(static_cast<double>(pad)).to(logits.dtype());
  return -(picked * real).sum() / real.sum();
}

TEST(TransformerTest, LogitsLossAndEveryGradientMatchPyTorch) {
  for (const char* name : {"transformer_post_sinusoidal_relu", "transformer_pre_learned_gelu"}) {
    SCOPED_TRACE(name);
    const auto& c = golden("nn_transformer", name);
    Transformer model(TransformerOptions::parse(c.param<std::string>("options")));
    ASSERT_EQ(parameter_names(model), c.param<std::vector<std::string>>("parameters"));
    load_golden_parameters(model, c);
    Tensor logits = model(c.input("src"), c.input("tgt_in"));
    EXPECT_TRUE(tensors_near(logits, c.output("logits"), 1e-5, 1e-4));
    Tensor loss = masked_cross_entropy(logits, c.input("tgt_out"), model.options().pad_idx);
    EXPECT_NEAR(loss.item<double>(), c.output("loss").item<double>(), 1e-5);
    loss.backward();
    expect_parameter_gradients_match(model, c, 2e-5, 1e-3);
  }
}

TEST(TransformerTest, ParameterNames) {
  Transformer model(tiny_options());
  std::vector<std::string> names = parameter_names(model);
  EXPECT_EQ(names.front(), "src_embed.weight");
  EXPECT_EQ(names[2], "encoder.layers.0.self_attn.w_q.weight");
  EXPECT_EQ(names.back(), "generator.bias");
  EXPECT_NE(std::find(names.begin(), names.end(), "decoder.layers.0.cross_attn.w_o.weight"),
            names.end());
  ASSERT_EQ(model.named_buffers().size(), 1u);
  EXPECT_EQ(model.named_buffers()[0].first, "positional.pe");
  Transformer learned(tiny_options(true, "learned"));
  names = parameter_names(learned);
  EXPECT_EQ(names[2], "src_pos.weight");
  EXPECT_EQ(names[3], "tgt_pos.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "encoder.norm.weight"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "decoder.norm.bias"), names.end());
}

TEST(TransformerTest, XavierInitAndZeroPaddingRows) {
  Transformer model(tiny_options(false, "learned"));
  for (const auto& [name, p] : model.named_parameters()) {
    if (p.dim() < 2) continue;
    init::Fans f = init::fans_of(p);
    const double bound = std::sqrt(6.0 / static_cast<double>(f.fan_in + f.fan_out));
    EXPECT_LE(p.abs().max().item<double>(), bound) << name;
    EXPECT_GT(p.abs().max().item<double>(), 0.5 * bound) << name;
  }
  EXPECT_EQ(model.src_embed->weight.select(0, 0).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(model.tgt_embed->weight.select(0, 0).abs().sum().item<double>(), 0.0);
}

TEST(TransformerTest, GradcheckTinyModel) {
  Transformer model(tiny_options());
  model.to(kFloat64);
  // No padding in tgt: the padding row of tgt_embed gets no gradient by design (padding_idx),
  // yet a padded target position still produces logits that depend on it.
  Tensor src = tokens({1, 2, 3, 4, 3, 2, 0, 0}, 2), tgt = tokens({1, 4, 2, 1, 3, 3}, 2);
  // Every parameter would take ~3000 forward passes; a sample from every part of the model is
  // enough to catch a wrong gradient anywhere on the path.
  std::vector<Tensor> checked;
  for (const char* name :
       {"src_embed.weight", "tgt_embed.weight", "encoder.layers.0.self_attn.w_k.weight",
        "encoder.layers.0.ffn.linear1.bias", "encoder.layers.0.norm2.weight",
        "decoder.layers.0.self_attn.w_q.bias", "decoder.layers.0.cross_attn.w_v.weight",
        "decoder.layers.0.cross_attn.w_o.bias", "decoder.layers.0.norm3.bias",
        "generator.weight"}) {
    for (const auto& [pname, p] : model.named_parameters()) {
      if (pname == name) checked.push_back(p);
    }
  }
  ASSERT_EQ(checked.size(), 10u);
  EXPECT_GRADCHECK([&](const auto&) { return model(src, tgt); }, checked);
}

TEST(TransformerTest, GradcheckTinyModelPreLNLearned) {
  Transformer model(tiny_options(true, "learned"));
  model.to(kFloat64);
  Tensor src = tokens({1, 2, 3, 4, 3, 0}, 2), tgt = tokens({1, 4, 2, 2, 3, 0}, 2);
  std::vector<Tensor> checked{model.src_pos->parameters()[0], model.tgt_pos->parameters()[0],
                              model.encoder->norm->weight, model.decoder->norm->bias,
                              model.generator->bias};
  EXPECT_GRADCHECK([&](const auto&) { return model(src, tgt); }, checked);
}

TEST(TransformerTest, CausalMaskFutureTargetTokensChangeNoEarlierOutput) {
  Transformer model(tiny_options());
  Tensor src = tokens({1, 2, 3, 4}, 1);
  Tensor a = model(src, tokens({1, 2, 3, 4, 2}, 1));
  Tensor b = model(src, tokens({1, 2, 3, 1, 4}, 1));  // positions 3 and 4 differ
  EXPECT_TRUE(tensors_near(b.narrow(1, 0, 3), a.narrow(1, 0, 3), 1e-6));
  EXPECT_FALSE(tensors_near(b.select(1, 3), a.select(1, 3), 1e-4));
}

TEST(TransformerTest, PaddingMaskPaddedSourceTokensChangeNoOutput) {
  // With pad_idx 0 the mask hides source positions 3 and 4 from everyone; so does writing
  // other tokens there, provided the mask still says "padding": build it from the first src.
  Transformer model(tiny_options());
  Tensor src = tokens({1, 2, 3, 0, 0}, 1), tgt = tokens({1, 4, 2}, 1);
  Tensor src_mask = model.source_mask(src);
  Tensor tgt_mask = model.target_mask(tgt);
  Tensor a = model.decode(tgt, model.encode(src, src_mask), src_mask, tgt_mask);
  Tensor other = tokens({1, 2, 3, 4, 1}, 1);
  Tensor b = model.decode(tgt, model.encode(other, src_mask), src_mask, tgt_mask);
  EXPECT_TRUE(tensors_near(b, a, 1e-6));
  EXPECT_TRUE(tensors_near(model(src, tgt), a, 1e-6));  // forward builds the same masks
  // Unmasked, the same change does show.
  EXPECT_FALSE(tensors_near(model(other, tgt), a, 1e-4));
}

TEST(TransformerTest, DropoutInactiveInEval) {
  TransformerOptions o = tiny_options();
  o.dropout = 0.3;
  Transformer model(o);
  Tensor src = tokens({1, 2, 3, 4}, 1), tgt = tokens({1, 4, 2}, 1);
  model.eval();
  Tensor a = model(src, tgt);
  EXPECT_TRUE(tensors_equal(model(src, tgt), a));
  model.train();
  EXPECT_FALSE(tensors_near(model(src, tgt), a, 1e-4));
}

TEST(TransformerTest, EncodeThenDecodeIsForward) {
  Transformer model(tiny_options(true));
  Tensor src = tokens({1, 2, 3, 0, 4, 4, 1, 2}, 2), tgt = tokens({1, 3, 0, 1, 2, 2}, 2);
  Tensor src_mask = model.source_mask(src);
  Tensor logits = model.decode(tgt, model.encode(src, src_mask), src_mask, model.target_mask(tgt));
  EXPECT_EQ(logits.shape(), (Shape{2, 3, 5}));
  EXPECT_TRUE(tensors_equal(logits, model(src, tgt)));
  EXPECT_EQ(model.target_mask(tgt).shape(), (Shape{2, 1, 3, 3}));
  EXPECT_EQ(model.source_mask(src).shape(), (Shape{2, 1, 1, 4}));
}

TEST(TransformerTest, DecodeStepWithCacheMatchesDecodingTheWholePrefix) {
  for (bool norm_first : {false, true}) {
    for (const char* positional : {"sinusoidal", "learned"}) {
      SCOPED_TRACE(fmt::format("norm_first={} positional={}", norm_first, positional));
      Transformer model(tiny_options(norm_first, positional));
      Tensor src = tokens({1, 2, 3, 0, 4, 4, 1, 2}, 2),
             tgt = tokens({1, 3, 2, 4, 1, 1, 2, 2, 3, 4}, 2);
      Tensor src_mask = model.source_mask(src);
      Tensor memory = model.encode(src, src_mask);
      Tensor full = model.decode(tgt, memory, src_mask, model.target_mask(tgt));  // [2, 5, 5]
      // One token at a time.
      DecoderCache cache = model.start_decoding(memory, src_mask);
      for (int64_t t = 0; t < 5; ++t) {
        Tensor step = model.decode_step(tgt.narrow(1, t, 1), cache);
        EXPECT_TRUE(tensors_near(step, full.narrow(1, t, 1), 1e-5, 1e-4)) << "position " << t;
      }
      EXPECT_EQ(cache.length, 5);
      EXPECT_EQ(cache.layers[0].self_k.tensor().shape(), (Shape{2, 2, 5, 4}));
      // Several tokens per step: causal among the new ones.
      DecoderCache chunked = model.start_decoding(memory, src_mask);
      Tensor first = model.decode_step(tgt.narrow(1, 0, 2), chunked);
      Tensor rest = model.decode_step(tgt.narrow(1, 2, 3), chunked);
      EXPECT_TRUE(tensors_near(cat({first, rest}, 1), full, 1e-5, 1e-4));
    }
  }
}

TEST(TransformerTest, DecodeStepPastMaxLenIsAnError) {
  Transformer model(tiny_options());  // max_len 8
  Tensor src = tokens({1, 2}, 1);
  Tensor src_mask = model.source_mask(src);
  DecoderCache cache = model.start_decoding(model.encode(src, src_mask), src_mask);
  model.decode_step(tokens(std::vector<int64_t>(8, 1), 1), cache);
  EXPECT_SG_ERROR(model.decode_step(tokens({1}, 1), cache),
                  "SinusoidalPositionalEncoding: positions 8..8 do not fit max_len 8");
}

TEST(TransformerTest, OptionsRoundTripThroughText) {
  TransformerOptions o = tiny_options(true, "learned");
  o.activation = "gelu";
  o.dropout = 0.1;
  o.layer_norm_eps = 1e-6;
  const std::string text = o.to_string();
  EXPECT_EQ(text.substr(0, 32), "src_vocab=5;tgt_vocab=5;d_model=");
  EXPECT_EQ(TransformerOptions::parse(text), o);
  TransformerOptions defaults;
  EXPECT_EQ(TransformerOptions::parse(""), defaults);
  EXPECT_EQ(TransformerOptions::parse("heads=4;norm_first=true").heads, 4);
  Transformer model(o);
  EXPECT_EQ(model.options(), o);
  EXPECT_NE(model.str().find("Transformer(\n  " + text), std::string::npos);
}

TEST(TransformerTest, OptionErrors) {
  TransformerOptions o = tiny_options();
  o.d_model = 30;
  o.heads = 4;
  EXPECT_SG_ERROR(o.validate(), "Transformer: d_model 30 is not divisible by heads 4");
  EXPECT_SG_ERROR(Transformer(o), "Transformer: d_model 30 is not divisible by heads 4");
  o = tiny_options();
  o.src_vocab = 0;
  EXPECT_SG_ERROR(o.validate(), "Transformer: src_vocab and tgt_vocab must be positive");
  o = tiny_options();
  o.pad_idx = 5;
  EXPECT_SG_ERROR(o.validate(), "Transformer: pad_idx 5 is outside the vocabularies");
  o = tiny_options();
  o.activation = "swish";
  EXPECT_SG_ERROR(o.validate(), "Transformer: activation must be \"relu\" or \"gelu\"");
  o = tiny_options();
  o.positional = "rotary";
  EXPECT_SG_ERROR(o.validate(), "Transformer: positional must be \"sinusoidal\" or \"learned\"");
  EXPECT_SG_ERROR(TransformerOptions::parse("d_model=8;colour=blue"),
                  "TransformerOptions::parse: unknown key 'colour'");
  EXPECT_SG_ERROR(TransformerOptions::parse("d_model=eight"),
                  "TransformerOptions::parse: 'eight' is not a valid value for d_model");
  EXPECT_SG_ERROR(TransformerOptions::parse("norm_first=yes"),
                  "'yes' is not a valid value for norm_first");
  EXPECT_SG_ERROR(TransformerOptions::parse("d_model"),
                  "TransformerOptions::parse: expected key=value");
}

TEST(TransformerTest, SequenceLongerThanMaxLenIsAnError) {
  Transformer model(tiny_options());  // max_len 8
  EXPECT_SG_ERROR(model(tokens(std::vector<int64_t>(9, 1), 1), tokens({1, 2}, 1)),
                  "SinusoidalPositionalEncoding: positions 0..8 do not fit max_len 8");
  EXPECT_SG_ERROR(model(tokens({1, 2}, 1), tokens(std::vector<int64_t>(10, 1), 1)),
                  "positions 0..9 do not fit max_len 8");
}

TEST(TransformerTest, InputErrors) {
  Transformer model(tiny_options());
  EXPECT_SG_ERROR(
      model(zeros({1, 3}), tokens({1, 2}, 1)),
      "Transformer: expected source tokens as int64 [B, L], got float32 of shape [1, 3]");
  EXPECT_SG_ERROR(
      model(tokens({1, 2, 3, 4}, 2), tokens({1, 2, 3}, 1)),
      "Transformer: source of shape [2, 2] and target of shape [1, 3] have different batch sizes");
}

}  // namespace
}  // namespace sg::nn
