// Tests for autograd/ops/join.cpp: cat, stack, split, chunk.
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::golden;
using testing::random_leaf;
using testing::tensors_equal;

// ---- cat ---------------------------------------------------------------------------------------

TEST(JoinCat, MatchesPyTorch) {
  const auto& a = golden("join", "cat_dim1");
  EXPECT_TRUE(tensors_equal(cat({a.input("a"), a.input("b"), a.input("c")}, 1), a.output()));
  EXPECT_TRUE(tensors_equal(cat({a.input("a"), a.input("b"), a.input("c")}, -1), a.output()));
  const auto& b = golden("join", "cat_dim0");
  EXPECT_TRUE(tensors_equal(cat({b.input("a"), b.input("b")}), b.output()));
}

TEST(JoinCat, NonContiguousAndEmptyInputs) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  Tensor out = cat({x.t(), zeros({0, 2}), x.t().slice(0, 0, 3, 2)}, 0);
  EXPECT_TRUE(tensors_equal(out, tensor({{0, 3}, {1, 4}, {2, 5}, {0, 3}, {2, 5}})));
  EXPECT_TRUE(tensors_equal(cat({x}), x));
  EXPECT_FALSE(cat({x}).shares_storage(x));  // always a new tensor
}

TEST(JoinCat, Gradient) {
  Tensor a = random_leaf({2, 3}), b = random_leaf({2, 1}, 1), c = random_leaf({3, 2}, 2);
  EXPECT_GRADCHECK([](const auto& in) { return cat({in[0], in[1], in[2].t()}, 1); }, {a, b, c});
  EXPECT_GRADCHECK([](const auto& in) { return cat({in[0], in[0] * 2.0}, 0); }, {a});
}

TEST(JoinCat, GradientIsTheMatchingSlabOfG) {
  Tensor a = zeros({1, 2}, kFloat64).requires_grad_();
  Tensor b = zeros({1, 3}, kFloat64).requires_grad_();
  Tensor w = tensor({{1, 2, 3, 4, 5}}, kFloat64);
  (cat({a, b}, 1) * w).sum().backward();
  EXPECT_TRUE(tensors_equal(a.grad(), tensor({{1, 2}}, kFloat64)));
  EXPECT_TRUE(tensors_equal(b.grad(), tensor({{3, 4, 5}}, kFloat64)));
}

TEST(JoinCat, Errors) {
  EXPECT_SG_ERROR(cat({}, 0), "cat: expected a non-empty list of tensors");
  EXPECT_SG_ERROR(cat({ones({2, 3}), ones({2, 4})}, 0),
                  "cat: tensors 0 and 1 have shapes [2, 3] and [2, 4], which differ outside dim 0");
  EXPECT_SG_ERROR(cat({ones({2, 3}), ones({3})}, 0),
                  "cat: tensors 0 and 1 have shapes [2, 3] and [3] (2 vs 1 dims)");
  EXPECT_SG_ERROR(cat({ones({2}), ones({2}, kFloat64)}, 0),
                  "cat: tensors 0 and 1 have dtypes float32 and float64");
  EXPECT_SG_ERROR(cat({ones({2}), ones({2})}, 1), "cat: dim 1 out of range for a 1-D tensor");
  EXPECT_SG_ERROR(cat({scalar_tensor(1.0)}, 0),
                  "cat: zero-dimensional tensor 0 cannot be concatenated");
}

// ---- stack -------------------------------------------------------------------------------------

TEST(JoinStack, MatchesPyTorch) {
  const auto& a = golden("join", "stack_dim0");
  EXPECT_TRUE(tensors_equal(stack({a.input("a"), a.input("b")}, 0), a.output()));
  const auto& b = golden("join", "stack_dim_last");
  Tensor out = stack({b.input("a"), b.input("b")}, -1);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 2}));
  EXPECT_TRUE(tensors_equal(out, b.output()));
}

TEST(JoinStack, GradientAndErrors) {
  Tensor a = random_leaf({2, 3}), b = random_leaf({3, 2}, 1);
  EXPECT_GRADCHECK([](const auto& in) { return stack({in[0], in[1].t()}, 1); }, {a, b});
  EXPECT_SG_ERROR(stack({ones({2, 3}), ones({3, 2})}),
                  "stack: tensors 0 and 1 have shapes [2, 3] and [3, 2]; stack needs equal shapes");
  EXPECT_SG_ERROR(stack({ones({2}), ones({2})}, 2), "stack: dim 2 out of range for a 2-D tensor");
}

// ---- split / chunk -----------------------------------------------------------------------------

TEST(JoinSplit, PiecesAreViewsAndTheLastMayBeSmaller) {
  Tensor x = arange(10, kFloat32).view({5, 2});
  std::vector<Tensor> pieces = x.split(2);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(pieces[2].shape(), (Shape{1, 2}));
  EXPECT_TRUE(tensors_equal(pieces[2], tensor({{8, 9}})));
  EXPECT_TRUE(pieces[1].shares_storage(x));
  std::vector<Tensor> columns = split(x, 1, -1);
  ASSERT_EQ(columns.size(), 2u);
  EXPECT_TRUE(tensors_equal(columns[1], tensor({{1}, {3}, {5}, {7}, {9}})));
  EXPECT_TRUE(tensors_equal(cat(pieces, 0), x));
  EXPECT_EQ(split(zeros({0, 2}), 3).size(), 1u);
}

TEST(JoinSplit, Gradient) {
  Tensor x = random_leaf({5, 3});
  EXPECT_GRADCHECK([](const auto& in) { return split(in[0], 2, 0)[2] * 3.0; }, {x});
  EXPECT_GRADCHECK(
      [](const auto& in) {
        auto p = split(in[0].t(), 2, 1);
        return p[0] * p[1];
      },
      {x});
}

TEST(JoinChunk, PyTorchPieceSizes) {
  const auto& c = golden("join", "chunk_7_by_3");
  std::vector<Tensor> pieces = chunk(c.input("x"), c.param<int64_t>("chunks"));
  ASSERT_EQ(pieces.size(), 3u);
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_TRUE(tensors_equal(pieces[i], c.output(fmt::format("piece{}", i)))) << i;
  }
  // ceil(6 / 4) = 2, so only 3 pieces; an empty dim still gives `chunks` empty pieces.
  EXPECT_EQ(chunk(zeros({6}), 4).size(), 3u);
  EXPECT_EQ(chunk(zeros({2, 6}), 6, 1).size(), 6u);
  EXPECT_EQ(chunk(zeros({0}), 3).size(), 3u);
}

TEST(JoinChunk, GradientAndErrors) {
  Tensor x = random_leaf({4, 6});
  EXPECT_GRADCHECK([](const auto& in) { return chunk(in[0], 3, -1)[1]; }, {x});
  EXPECT_SG_ERROR(chunk(ones({4}), 0), "chunk: chunks must be positive, got 0");
  EXPECT_SG_ERROR(split(ones({4}), 0), "split: split_size must be positive, got 0");
  EXPECT_SG_ERROR(split(ones({4}), 1, 1), "split: dim 1 out of range for a 1-D tensor");
  EXPECT_SG_ERROR(chunk(scalar_tensor(1.0), 2), "chunk: expected a tensor with at least 1 dim");
}

// ---- backward against PyTorch (float64, from a random upstream gradient) ----------------------

TEST(JoinBackward, MatchesPyTorch) {
  using In = const testing::GoldenInputs&;
  testing::expect_backward_goldens(
      "join", {
                  {"cat_grad_dim1",
                   [](In in) {
                     return cat({in.at("a"), in.at("b"), in.at("c")}, 1);
                   }},
                  {"cat_grad_dim0_same_tensor_twice",
                   [](In in) {
                     return cat({in.at("a"), in.at("b"), in.at("a")}, 0);
                   }},
                  {"stack_grad_dim0",
                   [](In in) {
                     return stack({in.at("a"), in.at("b")}, 0);
                   }},
                  {"stack_grad_dim_last",
                   [](In in) {
                     return stack({in.at("a"), in.at("b")}, -1);
                   }},
                  {"chunk_grad_7_by_3",
                   [](In in) {
                     auto pieces = in.at("x").chunk(3, 0);
                     return cat({pieces[2], pieces[0]}, 0);
                   }},
                  {"split_grad_2", [](In in) { return in.at("x").split(2, 1)[1] * 2.0; }},
              });
}

}  // namespace
}  // namespace sg
