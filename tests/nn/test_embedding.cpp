// Tests for nn/embedding.cpp: lookup and weight gradient against torch.nn.Embedding, the padding
// row (zero at init, never a gradient), N(0, 1) init, gradcheck, printing and errors.
#include "nn/embedding.h"

#include <cmath>

#include "tests/nn/golden_parameters.h"
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::golden;
using sg::testing::load_golden_parameters;
using sg::testing::random_leaf;
using sg::testing::tensors_near;

TEST(EmbeddingGolden, MatchesTorchValuesAndGradients) {
  const auto& c = golden("nn_layers", "embedding");
  Embedding emb(10, 4, c.param<int64_t>("padding_idx"));
  load_golden_parameters(emb, c);
  Tensor out = emb(c.input("x"));
  EXPECT_TRUE(tensors_near(out, c.output("out"), 0, 0));  // a lookup copies exactly
  (out * c.input("w")).sum().backward();
  EXPECT_TRUE(tensors_near(emb.weight.grad(), c.output("grad_weight"), 1e-6, 1e-6));
}

TEST(EmbeddingPadding, RowStartsAtZeroAndGetsNoGradient) {
  manual_seed(0);
  Embedding emb(5, 3, /*padding_idx=*/1);
  EXPECT_TRUE(tensors_near(emb.weight.select(0, 1), zeros({3}), 0, 0));
  Tensor ids = from_vector<int64_t>({1, 2, 1, 4, 2}, {5});
  emb(ids).sum().backward();
  Tensor g = emb.weight.grad();
  EXPECT_TRUE(tensors_near(g.select(0, 1), zeros({3}), 0, 0));      // padding: used twice, no grad
  EXPECT_TRUE(tensors_near(g.select(0, 2), full({3}, 2.0), 0, 0));  // used twice: grads add
  EXPECT_TRUE(tensors_near(g.select(0, 0), zeros({3}), 0, 0));      // unused
  // A negative padding_idx counts from the end, as in torch.
  EXPECT_EQ(Embedding(5, 3, -1).padding_idx, 4);
}

TEST(EmbeddingInit, StandardNormal) {
  manual_seed(0);
  Embedding emb(1000, 64);
  std::vector<float> w = emb.weight.to_vector<float>();
  double mean = 0, sq = 0;
  for (float v : w) {
    mean += v;
    sq += static_cast<double>(v) * v;
  }
  mean /= static_cast<double>(w.size());
  const double std = std::sqrt(sq / static_cast<double>(w.size()) - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(std, 1.0, 0.02);
}

TEST(EmbeddingGrad, Gradcheck) {
  Tensor ids = from_vector<int64_t>({0, 3, 3, 1, 0, 2}, {2, 3});
  EXPECT_GRADCHECK([&](const auto& in) { return embedding(in[0], ids); }, {random_leaf({4, 5})});
  // (No gradcheck with a padding_idx: its row's gradient is zero by design, not the derivative.)
  Embedding emb(4, 2, 0);
  emb.to(kFloat64);
  EXPECT_EQ(emb(ids).shape(), (Shape{2, 3, 2}));
}

TEST(EmbeddingModule, PrintingAndErrors) {
  EXPECT_EQ(Embedding(10, 4).str(), "Embedding(10, 4)");
  EXPECT_EQ(Embedding(10, 4, 0).str(), "Embedding(10, 4, padding_idx=0)");
  Embedding emb(10, 4);
  EXPECT_SG_ERROR(emb(zeros({2})), "Embedding: token ids must be int64, got float32 of shape [2]");
  EXPECT_SG_ERROR(Embedding(10, 4, 10), "Embedding: padding_idx 10 is out of range for 10");
  EXPECT_SG_ERROR(emb(full({1}, 10.0, kInt64)),
                  "embedding: token id 10 is out of range for 10 embeddings");
}

}  // namespace
}  // namespace sg::nn
