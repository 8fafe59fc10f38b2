// Tests for nn/decoder_only_transformer.cpp: logits, loss and every gradient against PyTorch
// (both norm orders), float64 gradient checks, causality, generation from <bos>, and the options'
// errors.
#include "nn/decoder_only_transformer.h"

#include <string>
#include <vector>

#include "nn/loss.h"
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

DecoderOnlyOptions tiny_options(bool norm_first = true, std::string positional = "learned") {
  return {.vocab = 7,
          .d_model = 8,
          .heads = 2,
          .layers = 2,
          .d_ff = 16,
          .max_len = 8,
          .dropout = 0.0,
          .norm_first = norm_first,
          .positional = std::move(positional)};
}

TEST(DecoderOnlyTransformer, LogitsLossAndEveryGradientMatchPyTorch) {
  for (const char* name : {"pre_learned_gelu", "post_sinusoidal_relu"}) {
    SCOPED_TRACE(name);
    const auto& c = golden("nn_decoder_only", name);
    DecoderOnlyTransformer model({.vocab = c.param<int64_t>("vocab"),
                                  .d_model = c.param<int64_t>("d_model"),
                                  .heads = c.param<int64_t>("heads"),
                                  .layers = c.param<int64_t>("layers"),
                                  .d_ff = c.param<int64_t>("d_ff"),
                                  .max_len = c.param<int64_t>("max_len"),
                                  .pad_idx = c.param<int64_t>("pad_idx"),
                                  .dropout = 0.0,
                                  .norm_first = c.param<bool>("norm_first"),
                                  .activation = c.param<std::string>("activation"),
                                  .positional = c.param<std::string>("positional")});
    ASSERT_EQ(parameter_names(model), c.param<std::vector<std::string>>("parameters"));
    load_golden_parameters(model, c);
    Tensor logits = model(c.input("tokens"));
    EXPECT_TRUE(tensors_near(logits, c.output("logits"), 1e-5, 1e-4));
    Tensor loss = cross_entropy(logits, c.input("target"), /*ignore_index=*/0);
    EXPECT_NEAR(loss.item<double>(), c.output("loss").item<double>(), 1e-5);
    loss.backward();
    expect_parameter_gradients_match(model, c, 2e-5, 1e-3);
  }
}

TEST(DecoderOnlyTransformer, GradcheckBothNormOrders) {
  for (bool norm_first : {true, false}) {
    SCOPED_TRACE(norm_first);
    DecoderOnlyTransformer model(tiny_options(norm_first, norm_first ? "learned" : "sinusoidal"));
    model.to(kFloat64);
    const Tensor tokens = from_vector<int64_t>({1, 3, 4, 6, 1, 5, 2, 3}, {2, 4});
    std::vector<Tensor> checked{model.embed->weight, model.blocks->layers->parameters()[0],
                                model.generator->bias};
    if (norm_first) checked.push_back(model.pos->parameters()[0]);
    EXPECT_GRADCHECK([&](const auto&) { return model(tokens); }, checked);
  }
}

// Position t sees tokens 0..t only: changing a later token leaves earlier logits alone.
TEST(DecoderOnlyTransformer, APositionSeesOnlyTheTokensBeforeIt) {
  DecoderOnlyTransformer model(tiny_options());
  model.eval();
  const Tensor a = model(from_vector<int64_t>({1, 3, 4, 6, 5}, {1, 5}));
  const Tensor b = model(from_vector<int64_t>({1, 3, 4, 2, 2}, {1, 5}));
  EXPECT_TRUE(tensors_equal(a.narrow(1, 0, 3), b.narrow(1, 0, 3)));
  EXPECT_FALSE(tensors_equal(a.narrow(1, 3, 1), b.narrow(1, 3, 1)));
}

TEST(DecoderOnlyTransformer, GreedyAndSampledSequencesFromBos) {
  manual_seed(3);
  DecoderOnlyTransformer model(tiny_options());
  model.eval();
  const GenerationOptions g{.max_length = 6, .bos = 1, .eos = 2, .pad = 0};
  const auto greedy = greedy_search(model, 3, g);
  ASSERT_EQ(greedy.size(), 3u);
  // Greedy is the argmax of the forward over each prefix, which every row shares.
  EXPECT_EQ(greedy[0], greedy[2]);
  std::vector<int64_t> prefix{1};
  for (int64_t token : greedy[0]) {
    const Tensor logits =
        model(from_vector(prefix, {1, static_cast<int64_t>(prefix.size())})).select(1, -1);
    Tensor real = logits.narrow(1, 1, 6);  // the argmax over every token but padding
    EXPECT_EQ(real.argmax(-1).item<int64_t>() + 1, token);
    prefix.push_back(token);
  }
  const SamplingOptions s{.temperature = 1.5, .top_k = 4, .seed = 9};
  const auto drawn = sample(model, 8, g, s);
  EXPECT_EQ(drawn, sample(model, 8, g, s));  // seeded
  for (const auto& row : drawn) {
    EXPECT_LE(row.size(), 6u);
    for (int64_t t : row) EXPECT_TRUE(t != 0 && t != 2 && t < 7) << t;  // no pad, no <eos>
  }
  EXPECT_EQ(sample(model, 3, g, {.top_k = 1}), greedy);  // top 1 is greedy
  // 300 rows are made 256 at a time, the draws going on: the first 256 are those of sample(256),
  // and the rest are not the first 44 again (a sampler restarted per chunk would repeat them).
  const auto many = sample(model, 300, g, s);
  ASSERT_EQ(many.size(), 300u);
  EXPECT_EQ(std::vector(many.begin(), many.begin() + 256), sample(model, 256, g, s));
  EXPECT_NE(std::vector(many.begin() + 256, many.end()),
            std::vector(many.begin(), many.begin() + 44));
  EXPECT_SG_ERROR(sample(model, 0, g, s), "sample: rows must be positive, got 0");
  EXPECT_SG_ERROR(greedy_search(model, 1, {.max_length = 9, .bos = 1, .eos = -1, .pad = 0}),
                  "DecoderOnlyTransformer generation: 9 tokens exceed max_len 8");
}

TEST(DecoderOnlyTransformer, ParameterNamesAndOptionErrors) {
  DecoderOnlyTransformer model(tiny_options());
  const std::vector<std::string> names = parameter_names(model);
  EXPECT_EQ(names.front(), "embed.weight");
  EXPECT_EQ(names[1], "pos.weight");
  EXPECT_EQ(names[2], "blocks.layers.0.self_attn.w_q.weight");
  EXPECT_EQ(names.back(), "generator.bias");
  EXPECT_EQ(model.embed->weight.select(0, 0).abs().sum().item<double>(), 0.0);
  DecoderOnlyOptions o = tiny_options();
  o.vocab = 0;
  EXPECT_SG_ERROR(o.validate(), "DecoderOnlyTransformer: vocab must be positive, got 0");
  o = tiny_options();
  o.d_model = 30;
  o.heads = 4;
  EXPECT_SG_ERROR(DecoderOnlyTransformer{o},
                  "DecoderOnlyTransformer: d_model 30 is not divisible by heads 4");
  EXPECT_SG_ERROR(model(from_vector<float>({1, 2}, {1, 2})),
                  "DecoderOnlyTransformer: expected tokens as int64 [B, T]");
}

}  // namespace
}  // namespace sg::nn
