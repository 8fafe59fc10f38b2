// Tests for autograd/ops/indexing.cpp: index_select, gather, embedding, one_hot.
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::golden;
using testing::random_leaf;
using testing::tensors_equal;

// ---- index_select ------------------------------------------------------------------------------

TEST(IndexingIndexSelect, MatchesPyTorch) {
  for (const char* name : {"index_select_dim0", "index_select_dim1"}) {
    const auto& c = golden("indexing", name);
    Tensor out = index_select(c.input("x"), c.param<int64_t>("dim"), c.input("index"));
    EXPECT_TRUE(tensors_equal(out, c.output())) << name;
  }
}

TEST(IndexingIndexSelect, NonContiguousInputAndZeroDimIndex) {
  Tensor x = arange(12, kFloat32).view({3, 4});
  Tensor out = x.t().index_select(0, tensor({3, 1}, kInt64));  // columns 3 and 1 of x
  EXPECT_TRUE(tensors_equal(out, tensor({{3, 7, 11}, {1, 5, 9}})));
  EXPECT_EQ(x.index_select(1, scalar_tensor(2, kInt64)).shape(), (Shape{3, 1}));
}

TEST(IndexingIndexSelect, Gradient) {
  Tensor x = random_leaf({5, 3});
  Tensor index = tensor({4, 0, 4, 2}, kInt64);  // 4 twice: its gradient must add up
  EXPECT_GRADCHECK([index](const auto& in) { return index_select(in[0], 0, index); }, {x});
  EXPECT_GRADCHECK([index](const auto& in) { return index_select(in[0].t(), 1, index); }, {x});
  Tensor y = random_leaf({5, 3}, 1);
  index_select(y, 0, index).sum().backward();
  EXPECT_TRUE(tensors_equal(y.grad().sum({1}), tensor({3, 0, 3, 0, 6}, kFloat64)));
}

TEST(IndexingIndexSelect, Errors) {
  EXPECT_SG_ERROR(index_select(ones({5, 3}), 0, tensor({1, 7}, kInt64)),
                  "index_select: index 7 is out of range for dim 0 of size 5");
  EXPECT_SG_ERROR(index_select(ones({5, 3}), 0, tensor({1.0, 2.0})),
                  "index_select: index must be an int64 tensor, got float32");
  EXPECT_SG_ERROR(index_select(ones({5, 3}), 0, ones({2, 2}, kInt64)),
                  "index_select: index must be 1-D, got shape [2, 2]");
  EXPECT_SG_ERROR(index_select(ones({5, 3}), 2, tensor({0}, kInt64)),
                  "index_select: dim 2 out of range for a 2-D tensor");
}

// ---- gather ------------------------------------------------------------------------------------

TEST(IndexingGather, MatchesPyTorch) {
  for (const char* name : {"gather_dim1", "gather_dim0_smaller_index"}) {
    const auto& c = golden("indexing", name);
    Tensor out = gather(c.input("x"), c.param<int64_t>("dim"), c.input("index"));
    EXPECT_TRUE(tensors_equal(out, c.output())) << name;
  }
}

TEST(IndexingGather, Gradient) {
  Tensor x = random_leaf({3, 4});
  Tensor index = tensor({{0, 3}, {2, 2}, {1, 0}}, kInt64);
  EXPECT_GRADCHECK([index](const auto& in) { return gather(in[0], 1, index); }, {x});
  EXPECT_GRADCHECK([index](const auto& in) { return gather(in[0].t(), 0, index.t()); }, {x});
  Tensor y = random_leaf({3, 4}, 1);
  gather(y, 1, index).sum().backward();
  EXPECT_TRUE(
      tensors_equal(y.grad(), tensor({{1, 0, 0, 1}, {0, 0, 2, 0}, {1, 1, 0, 0}}, kFloat64)));
}

TEST(IndexingGather, PicksTargetLogProbabilities) {
  // The cross-entropy idiom: one column per row.
  Tensor logp = tensor({{-0.1, -2.0, -3.0}, {-1.5, -0.3, -2.5}});
  Tensor target = tensor({{0}, {2}}, kInt64);
  EXPECT_TRUE(tensors_equal(logp.gather(1, target), tensor({{-0.1}, {-2.5}})));
}

TEST(IndexingGather, Errors) {
  EXPECT_SG_ERROR(gather(ones({3, 4}), 1, ones({3}, kInt64)),
                  "gather: index has 1 dims (shape [3]) but the input has 2 (shape [3, 4])");
  EXPECT_SG_ERROR(gather(ones({3, 4}), 1, zeros({4, 2}, kInt64)),
                  "gather: index of shape [4, 2] is larger than the input of shape [3, 4] in "
                  "dim 0 (4 > 3)");
  EXPECT_SG_ERROR(gather(ones({3, 4}), 1, full({3, 1}, 4, kInt64)),
                  "gather: index 4 is out of range for dim 1 of size 4");
  EXPECT_SG_ERROR(gather(ones({3, 4}), 0, ones({3, 4})),
                  "gather: index must be an int64 tensor, got float32");
}

// ---- embedding ---------------------------------------------------------------------------------

TEST(IndexingEmbedding, MatchesPyTorch) {
  const auto& c = golden("indexing", "embedding");
  Tensor out = embedding(c.input("weight"), c.input("ids"));
  EXPECT_EQ(out.shape(), (Shape{2, 3, 4}));
  EXPECT_TRUE(tensors_equal(out, c.output()));
}

TEST(IndexingEmbedding, Gradient) {
  Tensor weight = random_leaf({6, 4});
  Tensor ids = tensor({{0, 5, 2}, {2, 2, 1}}, kInt64);
  EXPECT_GRADCHECK([ids](const auto& in) { return embedding(in[0], ids); }, {weight});
  // Row 3 is never looked up, so padding_idx 3 changes nothing. (A padding row that IS looked up
  // gets gradient 0 by design, which finite differences would contradict; tested below.)
  EXPECT_GRADCHECK([ids](const auto& in) { return embedding(in[0], ids, 3); }, {weight});
}

TEST(IndexingEmbedding, PaddingRowGetsNoGradient) {
  Tensor weight = random_leaf({4, 3});
  Tensor ids = tensor({0, 2, 0, 3}, kInt64);
  Tensor out = embedding(weight, ids, /*padding_idx=*/0);
  EXPECT_TRUE(tensors_equal(out.select(0, 0), weight.detach().select(0, 0)));  // still looked up
  out.sum().backward();
  Tensor row_grads = weight.grad().sum({1});
  EXPECT_TRUE(tensors_equal(row_grads, tensor({0, 0, 3, 3}, kFloat64)));

  Tensor w2 = random_leaf({4, 3});
  embedding(w2, ids, /*padding_idx=*/-1).sum().backward();  // -1 is row 3
  EXPECT_TRUE(tensors_equal(w2.grad().sum({1}), tensor({6, 0, 3, 0}, kFloat64)));
}

TEST(IndexingEmbedding, Errors) {
  EXPECT_SG_ERROR(embedding(ones({6}), tensor({0}, kInt64)),
                  "embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape [6]");
  EXPECT_SG_ERROR(embedding(ones({6, 2}), tensor({0.0})),
                  "embedding: ids must be an int64 tensor, got float32");
  EXPECT_SG_ERROR(embedding(ones({6, 2}), tensor({6}, kInt64)),
                  "embedding: token id 6 is out of range for 6 embeddings");
  EXPECT_SG_ERROR(embedding(ones({6, 2}), tensor({0}, kInt64), 6),
                  "embedding: padding_idx 6 is out of range for 6 embeddings");
}

// ---- one_hot -----------------------------------------------------------------------------------

TEST(IndexingOneHot, MatchesPyTorch) {
  for (const char* name : {"one_hot_5", "one_hot_inferred"}) {
    const auto& c = golden("indexing", name);
    Tensor out = one_hot(c.input("index"), c.param<int64_t>("num_classes"));
    EXPECT_EQ(out.dtype(), kInt64);
    EXPECT_TRUE(tensors_equal(out, c.output())) << name;
  }
  EXPECT_EQ(one_hot(zeros({0}, kInt64), 3).shape(), (Shape{0, 3}));
}

TEST(IndexingOneHot, Errors) {
  EXPECT_SG_ERROR(one_hot(tensor({0, 3}, kInt64), 3),
                  "one_hot: class value 3 is out of range for 3 classes");
  EXPECT_SG_ERROR(one_hot(tensor({-1}, kInt64), 3),
                  "one_hot: class values must be non-negative, got -1");
  EXPECT_SG_ERROR(one_hot(tensor({1.0}), 3), "one_hot: index must be an int64 tensor, got float32");
  EXPECT_SG_ERROR(one_hot(zeros({0}, kInt64), -1),
                  "one_hot: cannot infer the number of classes from an empty tensor");
}

// ---- backward against PyTorch (float64, from a random upstream gradient) ----------------------

TEST(IndexingBackward, MatchesPyTorch) {
  using In = const testing::GoldenInputs&;
  testing::expect_backward_goldens(
      "indexing",
      {
          {"index_select_grad_dim0_repeats",
           [](In in) { return in.at("x").index_select(0, in.at("index")); }},
          {"index_select_grad_dim1",
           [](In in) { return in.at("x").index_select(1, in.at("index")); }},
          {"gather_grad_dim1_repeats", [](In in) { return in.at("x").gather(1, in.at("index")); }},
          {"gather_grad_dim0", [](In in) { return in.at("x").gather(0, in.at("index")); }},
          {"embedding_grad_padding_idx",
           [](In in) { return embedding(in.at("weight"), in.at("ids"), 2); }},
      });
}

}  // namespace
}  // namespace sg

namespace sg {
namespace {

TEST(IndexingEmbedding, NegativeIdsAreRejected) {
  // PyTorch raises for negative indices in embedding, index_select and gather; so do we.
  Tensor w = ones({4, 2});
  EXPECT_SG_ERROR(embedding(w, tensor({1, -1}, kInt64)), "embedding: token id -1 is out of range");
  EXPECT_SG_ERROR(index_select(w, 0, tensor({-1}, kInt64)),
                  "index_select: index -1 is out of range");
  EXPECT_SG_ERROR(gather(w, 1, tensor({{-1}, {0}, {0}, {0}}, kInt64)),
                  "gather: index -1 is out of range");
}

}  // namespace
}  // namespace sg
