#include <string>
#include <vector>

#include "nn/multihead_attention.h"
#include "tests/nn/golden_parameters.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::expect_parameter_gradients_match;
using sg::testing::golden;
using sg::testing::load_golden_parameters;
using sg::testing::random_leaf;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;

// x and the module's parameters, for gradcheck: the module reads its parameters itself, and
// gradcheck perturbs them in place.
std::vector<Tensor> with_parameters(std::vector<Tensor> inputs, const Module& m) {
  for (const Tensor& p : m.parameters()) inputs.push_back(p);
  return inputs;
}

TEST(MultiheadAttentionTest, MatchesTorchMultiheadAttention) {
  for (const char* name : {"mha_self", "mha_self_padding", "mha_self_causal", "mha_cross_padding",
                           "mha_four_heads_cross"}) {
    SCOPED_TRACE(name);
    const auto& c = golden("nn_attention", name);
    MultiheadAttention mha(c.param<int64_t>("d_model"), c.param<int64_t>("heads"));
    load_golden_parameters(mha, c);
    const bool masked = std::string(name) != "mha_self";
    Tensor key = c.input("key");
    AttentionOutput a = mha(c.input("query"), key, key, masked ? c.input("mask") : Tensor());
    EXPECT_TRUE(tensors_near(a.output, c.output("out"), 1e-5, 1e-4));
    EXPECT_TRUE(tensors_near(a.weights, c.output("weights"), 1e-6, 1e-4));
  }
}

TEST(MultiheadAttentionTest, GradientsMatchTorchInCrossAttention) {
  const auto& c = golden("nn_attention", "mha_cross_padding");
  MultiheadAttention mha(8, 2);
  load_golden_parameters(mha, c);
  Tensor query = c.input("query").requires_grad_(), key = c.input("key").requires_grad_();
  AttentionOutput a = mha(query, key, key, c.input("mask"));
  (a.output * c.input("r")).sum().backward();
  EXPECT_TRUE(tensors_near(query.grad(), c.output("grad.query"), 1e-5, 1e-4));
  EXPECT_TRUE(tensors_near(key.grad(), c.output("grad.key"), 1e-5, 1e-4));
  expect_parameter_gradients_match(mha, c, 1e-5, 1e-4);
}

TEST(MultiheadAttentionTest, ParameterNamesAndShapes) {
  MultiheadAttention mha(12, 3);
  EXPECT_EQ(mha.head_dim, 4);
  std::vector<std::string> names;
  for (const auto& [name, p] : mha.named_parameters()) {
    names.push_back(name);
    EXPECT_EQ(p.shape(), name.ends_with("weight") ? Shape({12, 12}) : Shape({12}));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"w_q.weight", "w_q.bias", "w_k.weight", "w_k.bias",
                                             "w_v.weight", "w_v.bias", "w_o.weight", "w_o.bias"}));
  EXPECT_EQ(MultiheadAttention(8, 2, 0.0, /*bias=*/false).num_parameters(), 4 * 64);
  EXPECT_EQ(mha.type_name(), "MultiheadAttention");
}

TEST(MultiheadAttentionTest, OutputAndWeightShapesInCrossAttention) {
  MultiheadAttention mha(8, 4);
  AttentionOutput a = mha(randn({2, 3, 8}), randn({2, 7, 8}), randn({2, 7, 8}));
  EXPECT_EQ(a.output.shape(), (Shape{2, 3, 8}));
  EXPECT_EQ(a.weights.shape(), (Shape{2, 4, 3, 7}));
  EXPECT_TRUE(tensors_near(a.weights.sum({-1}), ones({2, 4, 3}), 1e-6));
}

TEST(MultiheadAttentionTest, GradcheckSelfAttention) {
  MultiheadAttention mha(4, 2);
  mha.to(kFloat64);
  EXPECT_GRADCHECK([&](const auto& in) { return mha(in[0], in[0], in[0]).output; },
                   with_parameters({random_leaf({2, 3, 4}, 1)}, mha));
}

TEST(MultiheadAttentionTest, GradcheckCrossAttentionWithPaddingMask) {
  MultiheadAttention mha(4, 2);
  mha.to(kFloat64);
  Tensor mask = make_padding_mask(from_vector<int64_t>({1, 1, 1, 1, 1, 1, 1, 0, 0, 0}, {2, 5}), 0);
  EXPECT_GRADCHECK(
      [&](const auto& in) {
        AttentionOutput a = mha(in[0], in[1], in[2], mask);
        return a.output + a.weights.sum({1, 3}).unsqueeze(-1);
      },
      with_parameters(
          {random_leaf({2, 3, 4}, 2), random_leaf({2, 5, 4}, 3), random_leaf({2, 5, 4}, 4)}, mha));
}

TEST(MultiheadAttentionTest, GradcheckWithCausalMask) {
  MultiheadAttention mha(6, 3);
  mha.to(kFloat64);
  Tensor mask = make_causal_mask(4);
  EXPECT_GRADCHECK([&](const auto& in) { return mha(in[0], in[0], in[0], mask).output; },
                   with_parameters({random_leaf({1, 4, 6}, 5)}, mha));
}

TEST(MultiheadAttentionTest, ThreeDimensionalMaskIsPerBatchNotPerHead) {
  // A [B, T, S] mask gets a head dim: with B = H = 2 a wrong alignment would go unnoticed by
  // shape checks and apply batch 1's mask to head 1 of every batch.
  MultiheadAttention mha(4, 2);
  Tensor q = randn({2, 3, 4}), kv = randn({2, 3, 4});
  Tensor mask = from_vector<double>({1, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                     1, 0, 0, 1, 1, 0, 1, 1, 1},
                                    {2, 3, 3}, kBool);
  AttentionOutput three_d = mha(q, kv, kv, mask);
  AttentionOutput four_d = mha(q, kv, kv, mask.unsqueeze(1));
  EXPECT_TRUE(tensors_equal(three_d.output, four_d.output));
  EXPECT_EQ(three_d.weights.at<float>({1, 0, 0, 1}), 0.0f);
  EXPECT_GT(three_d.weights.at<float>({0, 1, 0, 1}), 0.0f);
}

TEST(MultiheadAttentionTest, DropoutInactiveInEval) {
  MultiheadAttention mha(8, 2, /*dropout=*/0.5);
  Tensor x = randn({2, 5, 8});
  mha.eval();
  AttentionOutput a = mha(x, x, x), b = mha(x, x, x);
  EXPECT_TRUE(tensors_equal(a.output, b.output));
  mha.dropout = 0.0;
  EXPECT_TRUE(tensors_equal(mha(x, x, x).output, a.output));
  mha.dropout = 0.5;
  mha.train();
  EXPECT_FALSE(tensors_near(mha(x, x, x).output, a.output, 1e-4));
}

TEST(MultiheadAttentionTest, Errors) {
  EXPECT_SG_ERROR(MultiheadAttention(30, 4),
                  "MultiheadAttention: d_model 30 is not divisible by heads 4");
  EXPECT_SG_ERROR(MultiheadAttention(8, 0),
                  "MultiheadAttention: d_model and heads must be positive");
  EXPECT_SG_ERROR(MultiheadAttention(8, 2, 1.0), "MultiheadAttention: dropout must be in [0, 1)");
  MultiheadAttention mha(8, 2);
  EXPECT_SG_ERROR(mha(randn({2, 3, 6}), randn({2, 3, 8}), randn({2, 3, 8})),
                  "MultiheadAttention: expected last dim 8 (d_model), got shapes [2, 3, 6]");
  EXPECT_SG_ERROR(mha(randn({3, 8}), randn({3, 8}), randn({3, 8})),
                  "MultiheadAttention: expected query, key and value of shape [B, L, D]");
  EXPECT_SG_ERROR(
      mha(randn({2, 3, 8}), randn({2, 4, 8}), randn({2, 5, 8})),
      "MultiheadAttention: key [2, 4, 8] and value [2, 5, 8] must have the same length");
  EXPECT_SG_ERROR(mha(randn({2, 3, 8}), randn({1, 4, 8}), randn({1, 4, 8})),
                  "MultiheadAttention: batch sizes differ");
  EXPECT_SG_ERROR(
      mha(randn({2, 3, 8}), randn({2, 4, 8}), randn({2, 4, 8}), ones({2, 1, 1, 3}, kBool)),
      "mask of shape [2, 1, 1, 3] cannot be broadcast to the scores' shape [2, 2, 3, 4]");
}

}  // namespace
}  // namespace sg::nn
