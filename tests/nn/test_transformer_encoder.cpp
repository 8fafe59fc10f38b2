#include <string>
#include <vector>

#include "nn/transformer_encoder.h"
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
  o.num_encoder_layers = 2;
  return o;
}

std::vector<Tensor> with_parameters(std::vector<Tensor> inputs, const Module& m) {
  for (const Tensor& p : m.parameters()) inputs.push_back(p);
  return inputs;
}

TEST(EncoderLayerTest, MatchesTorchTransformerEncoderLayer) {
  for (const char* name : {"encoder_layer_post", "encoder_layer_pre", "encoder_layer_pre_gelu"}) {
    SCOPED_TRACE(name);
    const auto& c = golden("nn_transformer", name);
    TransformerOptions o = small_options(c.param<bool>("norm_first"), c.param<int64_t>("d_model"),
                                         c.param<int64_t>("heads"), c.param<int64_t>("d_ff"));
    o.activation = c.param<std::string>("activation");
    EncoderLayer layer(o);
    EXPECT_EQ(parameter_names(layer), c.param<std::vector<std::string>>("parameters"));
    load_golden_parameters(layer, c);
    Tensor x = c.input("x").requires_grad_();
    Tensor y = layer(x, c.input("mask"));
    EXPECT_TRUE(tensors_near(y, c.output("out"), 1e-5, 1e-4));
    (y * c.input("r")).sum().backward();
    EXPECT_TRUE(tensors_near(x.grad(), c.output("grad.x"), 1e-5, 1e-4));
    expect_parameter_gradients_match(layer, c, 1e-5, 1e-4);
  }
}

TEST(EncoderLayerTest, GradcheckPostLN) {
  EncoderLayer layer(small_options(false));
  layer.to(kFloat64);
  Tensor mask = make_padding_mask(from_vector<int64_t>({1, 1, 1, 1, 1, 0}, {2, 3}), 0);
  EXPECT_GRADCHECK([&](const auto& in) { return layer(in[0], mask); },
                   with_parameters({random_leaf({2, 3, 4}, 1)}, layer));
}

TEST(EncoderLayerTest, GradcheckPreLN) {
  EncoderLayer layer(small_options(true));
  layer.to(kFloat64);
  Tensor mask = make_padding_mask(from_vector<int64_t>({1, 1, 0, 1, 1, 1}, {2, 3}), 0);
  EXPECT_GRADCHECK([&](const auto& in) { return layer(in[0], mask); },
                   with_parameters({random_leaf({2, 3, 4}, 2)}, layer));
}

TEST(EncoderLayerTest, PaddedPositionsDoNotChangeRealOutputs) {
  for (bool norm_first : {false, true}) {
    EncoderLayer layer(small_options(norm_first, 8, 2, 16));
    Tensor mask = make_padding_mask(from_vector<int64_t>({3, 4, 5, 0, 0}, {1, 5}), 0);
    Tensor x = randn({1, 5, 8});
    Tensor x2 = x.clone();
    {
      NoGradGuard no_grad;
      x2.narrow(1, 3, 2).normal_(0.0, 10.0);  // rewrite the two padded positions
    }
    EXPECT_TRUE(
        tensors_near(layer(x2, mask).narrow(1, 0, 3), layer(x, mask).narrow(1, 0, 3), 1e-6));
    // Without the mask they do leak in: the test can tell.
    EXPECT_FALSE(tensors_near(layer(x2).narrow(1, 0, 3), layer(x).narrow(1, 0, 3), 1e-4));
  }
}

TEST(EncoderLayerTest, DropoutInactiveInEval) {
  TransformerOptions o = small_options(false, 8, 2, 16);
  o.dropout = 0.5;
  EncoderLayer layer(o);
  Tensor x = randn({2, 3, 8});
  layer.eval();
  Tensor a = layer(x);
  EXPECT_TRUE(tensors_equal(layer(x), a));
  layer.train();
  EXPECT_FALSE(tensors_near(layer(x), a, 1e-4));
}

TEST(EncoderLayerTest, StructureAndNames) {
  EncoderLayer layer(small_options(false));
  EXPECT_EQ(layer.type_name(), "EncoderLayer");
  std::vector<std::string> names = parameter_names(layer);
  EXPECT_EQ(names.front(), "self_attn.w_q.weight");
  EXPECT_EQ(names.back(), "norm2.bias");
  EXPECT_EQ(
      layer.str().find("EncoderLayer(\n  norm_first=false\n  (self_attn): MultiheadAttention("), 0u)
      << layer.str();
}

TEST(EncoderTest, LayersAndFinalNormOnlyInPreLN) {
  Encoder post(small_options(false));
  Encoder pre(small_options(true));
  EXPECT_EQ(post.layers->size(), 2u);
  EXPECT_EQ(post.norm, nullptr);
  ASSERT_NE(pre.norm, nullptr);
  std::vector<std::string> names = parameter_names(pre);
  EXPECT_EQ(names.front(), "layers.0.self_attn.w_q.weight");
  EXPECT_EQ(names[names.size() - 2], "norm.weight");
  EXPECT_EQ(parameter_names(post).back(), "layers.1.norm2.bias");
  EXPECT_EQ(pre.num_parameters(), post.num_parameters() + 8);
}

TEST(EncoderTest, StacksItsLayers) {
  Encoder encoder(small_options(true));
  Tensor x = randn({2, 3, 4});
  Tensor mask = make_padding_mask(from_vector<int64_t>({1, 1, 1, 1, 0, 0}, {2, 3}), 0);
  Tensor h = x;
  for (size_t i = 0; i < 2; ++i) h = encoder.layers->at<EncoderLayer>(i)->forward(h, mask);
  EXPECT_TRUE(tensors_near(encoder(x, mask), encoder.norm->forward(h), 1e-6));
}

TEST(EncoderTest, GradcheckTwoLayers) {
  for (bool norm_first : {false, true}) {
    Encoder encoder(small_options(norm_first));
    encoder.to(kFloat64);
    Tensor mask = make_padding_mask(from_vector<int64_t>({1, 1, 1, 1, 1, 0}, {2, 3}), 0);
    EXPECT_GRADCHECK([&](const auto& in) { return encoder(in[0], mask); },
                     with_parameters({random_leaf({2, 3, 4}, 3)}, encoder));
  }
}

}  // namespace
}  // namespace sg::nn
