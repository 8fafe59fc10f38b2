#include <cmath>
#include <string>

#include "nn/attention.h"
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::golden;
using sg::testing::random_leaf;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;

TEST(AttentionTest, MatchesPyTorchGolden) {
  for (const char* name : {"sdpa_no_mask", "sdpa_padding_mask", "sdpa_causal_mask",
                           "sdpa_padding_and_causal", "sdpa_3d"}) {
    SCOPED_TRACE(name);
    const auto& c = golden("nn_attention", name);
    const bool masked = std::string(name) != "sdpa_no_mask" && std::string(name) != "sdpa_3d";
    Tensor mask = masked ? c.input("mask") : Tensor();
    AttentionOutput a =
        scaled_dot_product_attention(c.input("q"), c.input("k"), c.input("v"), mask);
    EXPECT_TRUE(tensors_near(a.output, c.output("out"), 1e-6, 1e-5));
    EXPECT_TRUE(tensors_near(a.weights, c.output("weights"), 1e-6, 1e-5));
  }
}

TEST(AttentionTest, ShapesWithDifferentQueryKeyAndValueSizes) {
  // T = 3 queries, S = 5 keys, Dh = 4, Dv = 6.
  AttentionOutput a =
      scaled_dot_product_attention(randn({2, 2, 3, 4}), randn({2, 2, 5, 4}), randn({2, 2, 5, 6}));
  EXPECT_EQ(a.output.shape(), (Shape{2, 2, 3, 6}));
  EXPECT_EQ(a.weights.shape(), (Shape{2, 2, 3, 5}));
}

TEST(AttentionTest, WeightRowsSumToOne) {
  Tensor mask =
      logical_and(make_padding_mask(from_vector<int64_t>({1, 2, 3, 0, 4, 0, 0, 0}, {2, 4}), 0),
                  make_causal_mask(4));
  AttentionOutput a = scaled_dot_product_attention(randn({2, 3, 4, 8}), randn({2, 3, 4, 8}),
                                                   randn({2, 3, 4, 8}), mask);
  EXPECT_TRUE(tensors_near(a.weights.sum({-1}), ones({2, 3, 4}), 1e-6));
  // Blocked entries get exactly zero weight.
  Tensor blocked_weight = where(mask.logical_not(), a.weights, zeros({}));
  EXPECT_EQ(blocked_weight.abs().sum().item<double>(), 0.0);
}

TEST(AttentionTest, ScalesByTheSquareRootOfTheHeadSize) {
  // One query, two keys: scores q·k / √Dh = [Dh, 0] / √Dh = [√Dh, 0] for q = k0 = ones(Dh).
  const int64_t Dh = 16;
  Tensor q = ones({1, 1, Dh}), k = cat({ones({1, 1, Dh}), zeros({1, 1, Dh})}, 1);
  AttentionOutput a = scaled_dot_product_attention(q, k, randn({1, 2, 3}));
  const double s = std::sqrt(static_cast<double>(Dh));
  EXPECT_NEAR(a.weights.at<float>({0, 0, 0}), std::exp(s) / (std::exp(s) + 1.0), 1e-6);
}

TEST(AttentionTest, GradcheckWithoutMask) {
  EXPECT_GRADCHECK(
      [](const auto& in) {
        AttentionOutput a = scaled_dot_product_attention(in[0], in[1], in[2]);
        return a.output + a.weights.sum({-1}, true);
      },
      {random_leaf({2, 3, 4}, 1), random_leaf({2, 5, 4}, 2), random_leaf({2, 5, 3}, 3)});
}

TEST(AttentionTest, GradcheckWithPaddingAndCausalMasks) {
  Tensor mask =
      logical_and(make_padding_mask(from_vector<int64_t>({1, 2, 3, 4, 5, 6, 0, 0}, {2, 4}), 0),
                  make_causal_mask(4));
  EXPECT_GRADCHECK(
      [mask](const auto& in) {
        AttentionOutput a = scaled_dot_product_attention(in[0], in[1], in[2], mask);
        // The weights feed the loss on their own too, through a fixed [S, Dv] matrix.
        return a.output * 2.0 +
               matmul(a.weights,
                      sg::tensor({{1.0, -2.0}, {0.5, 3.0}, {-1.0, 1.0}, {2.0, 0.25}}, kFloat64));
      },
      {random_leaf({2, 2, 4, 3}, 4), random_leaf({2, 2, 4, 3}, 5), random_leaf({2, 2, 4, 2}, 6)});
}

TEST(AttentionTest, GradcheckNonContiguousInputs) {
  // k and v are transposed views, as after splitting heads in MultiheadAttention.
  EXPECT_GRADCHECK(
      [](const auto& in) {
        return scaled_dot_product_attention(in[0], in[1].transpose(0, 1), in[2].transpose(0, 1))
            .output;
      },
      {random_leaf({2, 3, 4}, 7), random_leaf({5, 2, 4}, 8), random_leaf({5, 2, 3}, 9)});
}

TEST(AttentionTest, FullyMaskedRowGivesZeroWeightsZeroOutputAndNoNaN) {
  // Query 1 of batch 0 may attend to nothing: its weights and its output row are 0.
  Tensor mask = from_vector<double>({1, 1, 0, 0, 0, 0, 1, 0, 1}, {1, 3, 3}, kBool);
  Tensor q = random_leaf({1, 3, 4}, 10), k = random_leaf({1, 3, 4}, 11),
         v = random_leaf({1, 3, 2}, 12);
  AttentionOutput a = scaled_dot_product_attention(q, k, v, mask);
  EXPECT_TRUE(tensors_equal(a.weights.select(1, 1), zeros({1, 3}, kFloat64)));
  EXPECT_TRUE(tensors_equal(a.output.select(1, 1), zeros({1, 2}, kFloat64)));
  EXPECT_TRUE(tensors_near(a.weights.sum({-1}), from_vector<double>({1, 0, 1}, {1, 3}), 1e-12));
  (a.output.sum() + a.weights.sum()).backward();
  for (const Tensor& t : {q.grad(), k.grad(), v.grad()}) {
    for (double g : t.to_vector<double>()) EXPECT_TRUE(std::isfinite(g));
  }
  EXPECT_TRUE(tensors_equal(q.grad().select(1, 1), zeros({1, 4}, kFloat64)));
  EXPECT_GRADCHECK(
      [mask](const auto& in) {
        return scaled_dot_product_attention(in[0], in[1], in[2], mask).output;
      },
      {q, k, v});
}

TEST(AttentionTest, DropoutOnlyInTrainingAndNotOnReturnedWeights) {
  Tensor q = randn({2, 4, 8}), k = randn({2, 6, 8}), v = randn({2, 6, 8});
  AttentionOutput plain = scaled_dot_product_attention(q, k, v);
  AttentionOutput eval = scaled_dot_product_attention(q, k, v, Tensor(), 0.5, /*training=*/false);
  EXPECT_TRUE(tensors_equal(eval.output, plain.output));
  AttentionOutput train = scaled_dot_product_attention(q, k, v, Tensor(), 0.5, /*training=*/true);
  EXPECT_FALSE(tensors_near(train.output, plain.output, 1e-4));
  // The returned weights are the probabilities, before dropout: rows still sum to 1.
  EXPECT_TRUE(tensors_near(train.weights, plain.weights, 1e-6));
}

TEST(AttentionTest, Errors) {
  Tensor q = randn({2, 3, 4});
  EXPECT_SG_ERROR(scaled_dot_product_attention(q, randn({2, 5, 6}), randn({2, 5, 4})),
                  "scaled_dot_product_attention: q of shape [2, 3, 4] and k of shape [2, 5, 6]");
  EXPECT_SG_ERROR(scaled_dot_product_attention(q, randn({2, 5, 4}), randn({2, 6, 4})),
                  "k of shape [2, 5, 4] and v of shape [2, 6, 4]");
  EXPECT_SG_ERROR(scaled_dot_product_attention(q, q, q, ones({3, 3})),
                  "scaled_dot_product_attention: mask must be bool");
  EXPECT_SG_ERROR(scaled_dot_product_attention(q, q, q, ones({4, 3}, kBool)),
                  "mask of shape [4, 3] cannot be broadcast to the scores' shape [2, 3, 3]");
  EXPECT_SG_ERROR(scaled_dot_product_attention(q, q.to(kFloat64), q),
                  "scaled_dot_product_attention: q, k and v must share one floating dtype");
  EXPECT_SG_ERROR(scaled_dot_product_attention(randn({4}), randn({4}), randn({4})),
                  "need at least 2 dims");
}

TEST(MaskTest, PaddingMaskMarksRealTokens) {
  Tensor tokens = from_vector<int64_t>({5, 7, 0, 0, 3, 0, 2, 9}, {2, 4});
  Tensor mask = make_padding_mask(tokens, 0);
  EXPECT_EQ(mask.shape(), (Shape{2, 1, 1, 4}));
  EXPECT_TRUE(
      tensors_equal(mask, from_vector<double>({1, 1, 0, 0, 1, 0, 1, 1}, {2, 1, 1, 4}, kBool)));
  // Another pad id.
  EXPECT_TRUE(tensors_equal(make_padding_mask(tokens, 7).view({8}),
                            from_vector<double>({1, 0, 1, 1, 1, 1, 1, 1}, {8}, kBool)));
}

TEST(MaskTest, CausalMaskIsLowerTriangular) {
  Tensor mask = make_causal_mask(3);
  EXPECT_EQ(mask.shape(), (Shape{1, 1, 3, 3}));
  EXPECT_TRUE(tensors_equal(mask.view({3, 3}), tensor({{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}, kBool)));
}

TEST(MaskTest, CombinedMaskBroadcastsToBatchByQueryByKey) {
  Tensor tokens = from_vector<int64_t>({4, 4, 0, 4, 4, 4}, {2, 3});
  Tensor mask = logical_and(make_padding_mask(tokens, 0), make_causal_mask(3));
  EXPECT_EQ(mask.shape(), (Shape{2, 1, 3, 3}));
  EXPECT_TRUE(tensors_equal(mask.select(0, 0).view({3, 3}),
                            tensor({{1, 0, 0}, {1, 1, 0}, {1, 1, 0}}, kBool)));
}

TEST(MaskTest, Errors) {
  EXPECT_SG_ERROR(make_padding_mask(zeros({2, 3}), 0),
                  "make_padding_mask: expected int64 tokens of shape [B, S], got float32");
  EXPECT_SG_ERROR(make_padding_mask(zeros({2}, kInt64), 0), "of shape [2]");
  EXPECT_SG_ERROR(make_causal_mask(-1), "make_causal_mask: length must be non-negative, got -1");
}

}  // namespace
}  // namespace sg::nn
