#include <string>
#include <vector>

#include "nn/transformer_decoder.h"
#include "tests/nn/golden_parameters.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::expect_parameter_gradients_match;
using sg::testing::golden;
using sg::testing::load_golden_parameters;
using sg::testing::parameter_names;
using sg::testing::random_leaf;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;

TransformerOptions small_options(bool norm_first, int64_t d_model = 4, int64_t heads = 2,
                                 int64_t d_ff = 8) {
  TransformerOptions o;
  o.d_model = d_model;
  o.heads = heads;
  o.d_ff = d_ff;
  o.dropout = 0.0;
  o.norm_first = norm_first;
  o.num_decoder_layers = 2;
  return o;
}

std::vector<Tensor> with_parameters(std::vector<Tensor> inputs, const Module& m) {
  for (const Tensor& p : m.parameters()) inputs.push_back(p);
  return inputs;
}

TEST(DecoderLayerTest, MatchesTorchTransformerDecoderLayer) {
  for (const char* name : {"decoder_layer_post", "decoder_layer_pre"}) {
    SCOPED_TRACE(name);
    const auto& c = golden("nn_transformer", name);
    TransformerOptions o = small_options(c.param<bool>("norm_first"), c.param<int64_t>("d_model"),
                                         c.param<int64_t>("heads"), c.param<int64_t>("d_ff"));
    DecoderLayer layer(o);
    EXPECT_EQ(parameter_names(layer), c.param<std::vector<std::string>>("parameters"));
    load_golden_parameters(layer, c);
    Tensor x = c.input("x").requires_grad_(), memory = c.input("memory").requires_grad_();
    Tensor y = layer(x, memory, c.input("tgt_mask"), c.input("memory_mask"));
    EXPECT_TRUE(tensors_near(y, c.output("out"), 1e-5, 1e-4));
    (y * c.input("r")).sum().backward();
    EXPECT_TRUE(tensors_near(x.grad(), c.output("grad.x"), 1e-5, 1e-4));
    EXPECT_TRUE(tensors_near(memory.grad(), c.output("grad.memory"), 1e-5, 1e-4));
    expect_parameter_gradients_match(layer, c, 1e-5, 1e-4);
  }
}

TEST(DecoderLayerTest, GradcheckPostLN) {
  DecoderLayer layer(small_options(false));
  layer.to(kFloat64);
  Tensor tgt_mask = make_causal_mask(3);
  Tensor memory_mask = make_padding_mask(from_vector<int64_t>({1, 1, 1, 1, 1, 1, 0, 0}, {2, 4}), 0);
  EXPECT_GRADCHECK([&](const auto& in) { return layer(in[0], in[1], tgt_mask, memory_mask); },
                   with_parameters({random_leaf({2, 3, 4}, 1), random_leaf({2, 4, 4}, 2)}, layer));
}

TEST(DecoderLayerTest, GradcheckPreLN) {
  DecoderLayer layer(small_options(true));
  layer.to(kFloat64);
  Tensor tgt_mask = logical_and(
      make_causal_mask(3), make_padding_mask(from_vector<int64_t>({1, 1, 1, 1, 1, 0}, {2, 3}), 0));
  Tensor memory_mask = make_padding_mask(from_vector<int64_t>({1, 1, 0, 0, 1, 1, 1, 1}, {2, 4}), 0);
  EXPECT_GRADCHECK([&](const auto& in) { return layer(in[0], in[1], tgt_mask, memory_mask); },
                   with_parameters({random_leaf({2, 3, 4}, 3), random_leaf({2, 4, 4}, 4)}, layer));
}

TEST(DecoderLayerTest, CausalMaskHidesTheFuture) {
  for (bool norm_first : {false, true}) {
    DecoderLayer layer(small_options(norm_first, 8, 2, 16));
    Tensor x = randn({1, 4, 8}), memory = randn({1, 5, 8});
    Tensor x2 = x.clone();
    {
      NoGradGuard no_grad;
      x2.select(1, 2).normal_(0.0, 5.0);  // change position 2
    }
    Tensor mask = make_causal_mask(4);
    Tensor y = layer(x, memory, mask), y2 = layer(x2, memory, mask);
    EXPECT_TRUE(tensors_near(y2.narrow(1, 0, 2), y.narrow(1, 0, 2), 1e-6));  // 0, 1 unchanged
    EXPECT_FALSE(tensors_near(y2.select(1, 3), y.select(1, 3), 1e-4));       // 3 sees 2
  }
}

TEST(DecoderLayerTest, KeepsTheLastAttentionWeights) {
  DecoderLayer layer(small_options(false));
  Tensor x = randn({2, 3, 4}, TensorOptions().requires_grad(true)), memory = randn({2, 5, 4});
  Tensor memory_mask =
      make_padding_mask(from_vector<int64_t>({1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, {2, 5}), 0);
  layer(x, memory, make_causal_mask(3), memory_mask);
  EXPECT_EQ(layer.last_self_attention.shape(), (Shape{2, 2, 3, 3}));
  EXPECT_EQ(layer.last_cross_attention.shape(), (Shape{2, 2, 3, 5}));
  EXPECT_FALSE(layer.last_self_attention.requires_grad());              // detached
  EXPECT_EQ(layer.last_self_attention.at<float>({0, 1, 0, 2}), 0.0f);   // causal
  EXPECT_EQ(layer.last_cross_attention.at<float>({1, 0, 2, 4}), 0.0f);  // source padding
  EXPECT_TRUE(tensors_near(layer.last_cross_attention.sum({-1}), ones({2, 2, 3}), 1e-6));
}

TEST(DecoderLayerTest, DropoutInactiveInEval) {
  TransformerOptions o = small_options(true, 8, 2, 16);
  o.dropout = 0.5;
  DecoderLayer layer(o);
  Tensor x = randn({2, 3, 8}), memory = randn({2, 4, 8});
  layer.eval();
  Tensor a = layer(x, memory);
  EXPECT_TRUE(tensors_equal(layer(x, memory), a));
  layer.train();
  EXPECT_FALSE(tensors_near(layer(x, memory), a, 1e-4));
}

TEST(DecoderTest, LayersAndFinalNormOnlyInPreLN) {
  Decoder post(small_options(false));
  Decoder pre(small_options(true));
  EXPECT_EQ(pre.layers->size(), 2u);
  EXPECT_EQ(post.norm, nullptr);
  ASSERT_NE(pre.norm, nullptr);
  std::vector<std::string> names = parameter_names(pre);
  EXPECT_EQ(names[8], "layers.0.cross_attn.w_q.weight");
  EXPECT_EQ(names.back(), "norm.bias");
  EXPECT_EQ(parameter_names(post).back(), "layers.1.norm3.bias");
}

TEST(DecoderTest, GradcheckTwoLayers) {
  for (bool norm_first : {false, true}) {
    Decoder decoder(small_options(norm_first));
    decoder.to(kFloat64);
    Tensor tgt_mask = make_causal_mask(2);
    EXPECT_GRADCHECK(
        [&](const auto& in) { return decoder(in[0], in[1], tgt_mask); },
        with_parameters({random_leaf({1, 2, 4}, 5), random_leaf({1, 3, 4}, 6)}, decoder));
  }
}

}  // namespace
}  // namespace sg::nn
