// Tests for autograd/ops/matmul.cpp: every rank combination of torch.matmul against the naive
// reference gemm (float64) and against PyTorch (float32 golden values), views that BLAS reads
// directly or that must be copied first, gradients by gradcheck, and the error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/support/golden.h"
#include "tests/support/reference_gemm.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::random_leaf;
using testing::reference_matmul;
using testing::tensors_near;

// A float64 tensor with fixed random values (no grad).
Tensor random64(const Shape& shape, uint64_t seed) { return random_leaf(shape, seed).detach(); }

// matmul(a, b) against the reference, in float64: both sum the same terms, so only rounding
// in a different order separates them.
::testing::AssertionResult matches_reference(const Tensor& a, const Tensor& b) {
  Tensor out = matmul(a, b);
  if (out.dtype() != kFloat64)
    return ::testing::AssertionFailure() << "dtype " << dtype_name(out.dtype());
  if (!out.is_contiguous()) return ::testing::AssertionFailure() << "output not contiguous";
  return tensors_near(out, reference_matmul(a, b), 1e-12, 1e-12);
}

// ---- forward: every rank combination -------------------------------------------------------

struct ShapePair {
  Shape a, b, out;
};

// "2x3x4_times_4x5": the test's name and its printout (ctest lists it so).
std::string shapes_name(const ShapePair& p) {
  return fmt::format("{}_times_{}", fmt::join(p.a, "x"), fmt::join(p.b, "x"));
}
void PrintTo(const ShapePair& p, std::ostream* os) { *os << shapes_name(p); }

class MatmulShapes : public ::testing::TestWithParam<ShapePair> {};

TEST_P(MatmulShapes, MatchesReferenceAndShape) {
  const ShapePair& p = GetParam();
  Tensor a = random64(p.a, 1), b = random64(p.b, 2);
  EXPECT_EQ(matmul(a, b).shape(), p.out);
  EXPECT_TRUE(matches_reference(a, b));
}

INSTANTIATE_TEST_SUITE_P(
    MatmulRanks, MatmulShapes,
    ::testing::Values(ShapePair{{5}, {5}, {}},                     // dot
                      ShapePair{{3, 4}, {4, 5}, {3, 5}},           // matrix · matrix
                      ShapePair{{4}, {4, 5}, {5}},                 // vector · matrix
                      ShapePair{{3, 4}, {4}, {3}},                 // matrix · vector
                      ShapePair{{4}, {2, 4, 5}, {2, 5}},           // vector · batch
                      ShapePair{{2, 3, 4}, {4}, {2, 3}},           // batch · vector
                      ShapePair{{2, 3, 4}, {2, 4, 5}, {2, 3, 5}},  // batch · batch
                      ShapePair{{2, 3, 4}, {4, 5}, {2, 3, 5}},     // batch · matrix (one gemm)
                      ShapePair{{3, 4}, {2, 4, 5}, {2, 3, 5}},     // matrix · batch
                      ShapePair{{2, 2, 3, 4}, {2, 2, 4, 5}, {2, 2, 3, 5}},
                      ShapePair{{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},  // broadcast batch
                      ShapePair{{1, 3, 2, 4}, {2, 1, 4, 5}, {2, 3, 2, 5}},
                      ShapePair{{1, 2, 3}, {3, 4}, {1, 2, 4}},
                      ShapePair{{2, 3, 4}, {1, 4, 5}, {2, 3, 5}},  // b broadcast over the batch
                      ShapePair{{1, 1}, {1, 1}, {1, 1}},           // size-1 dims
                      ShapePair{{1, 4}, {4, 1}, {1, 1}},
                      ShapePair{{3, 1}, {1, 5}, {3, 5}},  // K = 1: an outer product
                      ShapePair{{1}, {1}, {}}, ShapePair{{1}, {1, 3}, {3}},
                      ShapePair{{3, 1}, {1}, {3}}, ShapePair{{4, 64}, {64, 4}, {4, 4}}));

TEST(MatmulForward, ValuesOfASmallProduct) {
  // [[1, 2], [3, 4]] · [[5, 6], [7, 8]] = [[19, 22], [43, 50]], worked by hand.
  Tensor a = tensor({{1, 2}, {3, 4}}), b = tensor({{5, 6}, {7, 8}});
  EXPECT_TRUE(testing::tensors_equal(matmul(a, b), tensor({{19, 22}, {43, 50}})));
  EXPECT_TRUE(testing::tensors_equal(a.matmul(b), tensor({{19, 22}, {43, 50}})));
  EXPECT_EQ(matmul(tensor({1, 2, 3}), tensor({4, 5, 6})).item<float>(), 32.0f);
}

TEST(MatmulForward, KeepsTheDtype) {
  EXPECT_EQ(matmul(ones({2, 3}), ones({3, 2})).dtype(), kFloat32);
  EXPECT_EQ(matmul(ones({2, 3}, kFloat64), ones({3, 2}, kFloat64)).dtype(), kFloat64);
}

TEST(MatmulForward, EmptyInnerSizeGivesZeros) {
  // A sum of no terms is 0. The output's memory is uninitialised, so dirty the allocator first:
  // the output then most likely reuses a block that held NaNs.
  for (const auto& [sa, sb, so] :
       std::vector<std::tuple<Shape, Shape, Shape>>{{{3, 0}, {0, 4}, {3, 4}},
                                                    {{2, 3, 0}, {0, 5}, {2, 3, 5}},
                                                    {{2, 3, 0}, {2, 0, 5}, {2, 3, 5}},
                                                    {{0}, {0}, {}}}) {
    { Tensor dirty = full(so, NAN, kFloat64); }
    Tensor out = matmul(zeros(sa, kFloat64), zeros(sb, kFloat64));
    EXPECT_TRUE(testing::tensors_equal(out, zeros(so, kFloat64))) << fmt::format("{}", sa);
    EXPECT_TRUE(matches_reference(zeros(sa, kFloat64), zeros(sb, kFloat64)));
  }
  EXPECT_EQ(matmul(zeros({3, 0}), zeros({0, 4})).shape(), (Shape{3, 4}));
}

TEST(MatmulForward, EmptyOuterSizesGiveEmptyResults) {
  EXPECT_EQ(matmul(zeros({0, 4}), zeros({4, 5})).shape(), (Shape{0, 5}));
  EXPECT_EQ(matmul(zeros({3, 4}), zeros({4, 0})).shape(), (Shape{3, 0}));
  EXPECT_EQ(matmul(zeros({0, 3, 4}), zeros({4, 5})).shape(), (Shape{0, 3, 5}));
  EXPECT_EQ(matmul(zeros({2, 0, 3, 4}), zeros({1, 4, 5})).shape(), (Shape{2, 0, 3, 5}));
}

// ---- forward: views ---------------------------------------------------------------------------

TEST(MatmulViews, TransposedOperands) {
  Tensor a = random64({4, 3}, 3), b = random64({5, 4}, 4);  // used as a.t() [3, 4], b.t() [4, 5]
  EXPECT_TRUE(matches_reference(a.t(), random64({4, 5}, 5)));
  EXPECT_TRUE(matches_reference(random64({3, 4}, 6), b.t()));
  EXPECT_TRUE(matches_reference(a.t(), b.t()));
  EXPECT_TRUE(matches_reference(b, a));  // and the contiguous originals still work
}

TEST(MatmulViews, TransposedBatches) {
  Tensor q = random64({2, 3, 5, 8}, 7), k = random64({2, 3, 7, 8}, 8);
  EXPECT_TRUE(matches_reference(q, k.transpose(-2, -1)));  // attention scores
  EXPECT_TRUE(matches_reference(k.transpose(-2, -1), random64({2, 3, 7, 4}, 25)));  // aᵀ · b
  EXPECT_TRUE(matches_reference(q.transpose(-2, -1),                                // aᵀ · bᵀ
                                random64({2, 3, 4, 5}, 26).transpose(-2, -1)));
}

TEST(MatmulViews, BatchDimsInAnyOrder) {
  // [M, B, K] -> [B, M, K]: a's rows are not laid end to end, so the batch · matrix product
  // cannot be one tall gemm and must run matrix by matrix.
  Tensor x = random64({3, 2, 4}, 9), w = random64({4, 5}, 10);
  EXPECT_TRUE(matches_reference(x.transpose(0, 1), w));
  EXPECT_TRUE(matches_reference(x.transpose(0, 1), w.t().contiguous().t()));
  Tensor y = random64({4, 2, 5}, 11);  // [K, B, N] -> [B, K, N]
  EXPECT_TRUE(matches_reference(x.transpose(0, 1), y.transpose(0, 1)));
  EXPECT_TRUE(matches_reference(x.permute({1, 2, 0}).transpose(1, 2), y.transpose(0, 1)));
}

TEST(MatmulViews, SlicedOperands) {
  Tensor a = random64({3, 10}, 12), b = random64({9, 5}, 13);
  // Every other column: neither of the last two strides is 1, so the kernel copies it first.
  EXPECT_TRUE(matches_reference(a.slice(1, 0, 8, 2), b.slice(0, 0, 4)));
  // Every other row: a stride-1 row with a larger leading dimension, read in place.
  EXPECT_TRUE(matches_reference(b.slice(0, 0, 9, 2), random64({5, 3}, 14)));
  // A window in the middle, and a vector taken from a column of a matrix.
  EXPECT_TRUE(matches_reference(a.slice(1, 2, 7), b.slice(0, 3, 8)));
  EXPECT_TRUE(matches_reference(a.select(1, 1), random64({3, 4}, 15)));
  EXPECT_TRUE(matches_reference(random64({2, 3, 9}, 16), b.select(1, 2)));
}

TEST(MatmulViews, ExpandedOperands) {
  // Stride-0 operands, as broadcasting makes them.
  Tensor row = random64({1, 4}, 17), col = random64({4, 1}, 18);
  EXPECT_TRUE(matches_reference(row.expand({3, 4}), random64({4, 2}, 19)));
  EXPECT_TRUE(matches_reference(random64({2, 4}, 20), col.expand({4, 6})));
  EXPECT_TRUE(
      matches_reference(random64({3, 4}, 21).expand({2, 3, 3, 4}), random64({2, 1, 4, 2}, 22)));
}

TEST(MatmulViews, InputsAreNotModified) {
  Tensor a = random64({3, 4}, 23), b = random64({4, 2}, 24);
  std::vector<double> a_before = a.to_vector<double>(), b_before = b.to_vector<double>();
  matmul(a.t().t(), b);
  matmul(a.slice(1, 0, 4, 2), b.slice(0, 0, 4, 2));
  EXPECT_EQ(a.to_vector<double>(), a_before);
  EXPECT_EQ(b.to_vector<double>(), b_before);
}

// ---- forward: against PyTorch (float32) -------------------------------------------------------

TEST(MatmulGolden, EveryRankCombination) {
  for (const char* name :
       {"dot", "matrix_matrix", "vector_matrix", "matrix_vector", "vector_batched",
        "batched_vector", "batched_batched", "batched_matrix", "matrix_batched", "broadcast_batch",
        "broadcast_both", "inner_size_1", "long_sum"}) {
    const auto& c = testing::golden("matmul", name);
    Tensor out = matmul(c.input("a"), c.input("b"));
    EXPECT_EQ(out.dtype(), kFloat32) << name;
    EXPECT_TRUE(tensors_near(out, c.output(), 1e-5, 1e-5)) << name;
  }
}

TEST(MatmulGolden, Views) {
  const auto& transposed = testing::golden("matmul", "transposed_both");
  EXPECT_TRUE(tensors_near(matmul(transposed.input("a").t(), transposed.input("b").t()),
                           transposed.output(), 1e-5, 1e-5));
  const auto& sliced = testing::golden("matmul", "sliced_columns");
  EXPECT_TRUE(tensors_near(matmul(sliced.input("a").slice(1, 0, 8, 2), sliced.input("b")),
                           sliced.output(), 1e-5, 1e-5));
  const auto& attention = testing::golden("matmul", "attention_scores");
  EXPECT_TRUE(tensors_near(matmul(attention.input("q"), attention.input("k").transpose(-2, -1)),
                           attention.output(), 1e-5, 1e-5));
}

// ---- backward ---------------------------------------------------------------------------------

// gradcheck on float64 leaves of the given shapes; fn (plain matmul by default) may make views of
// the leaves before multiplying them.
void expect_gradcheck(
    const Shape& sa, const Shape& sb,
    const std::function<Tensor(const std::vector<Tensor>&)>& fn =
        [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }) {
  EXPECT_GRADCHECK(fn, {random_leaf(sa, 31), random_leaf(sb, 32)})
      << fmt::format("{} · {}", sa, sb);
}

TEST(MatmulGradcheck, EveryRankCombination) {
  expect_gradcheck({5}, {5});
  expect_gradcheck({3, 4}, {4, 5});
  expect_gradcheck({4}, {4, 5});
  expect_gradcheck({3, 4}, {4});
  expect_gradcheck({4}, {2, 4, 5});
  expect_gradcheck({2, 3, 4}, {4});
  expect_gradcheck({2, 3, 4}, {2, 4, 5});
  expect_gradcheck({2, 3, 4}, {4, 5});  // dB summed over the batch inside one gemm
  expect_gradcheck({3, 4}, {2, 4, 5});  // dA summed over the batch by the engine
}

TEST(MatmulGradcheck, BroadcastBatch) {
  expect_gradcheck({2, 1, 3, 4}, {5, 4, 2});
  expect_gradcheck({1, 3, 2, 4}, {2, 1, 4, 5});
  expect_gradcheck({2, 3, 4}, {1, 4, 5});
  expect_gradcheck({4}, {2, 1, 4, 3});
  expect_gradcheck({2, 1, 3, 4}, {4});
}

TEST(MatmulGradcheck, SizeOneDims) {
  expect_gradcheck({1, 1}, {1, 1});
  expect_gradcheck({3, 1}, {1, 5});
  expect_gradcheck({1, 4}, {4, 1});
  expect_gradcheck({1}, {1});
}

TEST(MatmulGradcheck, TransposedAndSlicedInputs) {
  // The views are made inside fn, so the gradient flows back through them to the leaves.
  expect_gradcheck({4, 3}, {5, 4}, [](const auto& in) { return matmul(in[0].t(), in[1].t()); });
  expect_gradcheck({2, 3, 4, 5}, {2, 3, 6, 5},  // attention scores q · kᵀ
                   [](const auto& in) { return matmul(in[0], in[1].transpose(-2, -1)); });
  expect_gradcheck({3, 2, 4}, {4, 5},  // a batch whose rows are not laid end to end
                   [](const auto& in) { return matmul(in[0].transpose(0, 1), in[1]); });
  expect_gradcheck({3, 8}, {6, 5}, [](const auto& in) {
    return matmul(in[0].slice(1, 0, 8, 2), in[1].slice(0, 1, 5));
  });
  expect_gradcheck({1, 4}, {4, 3}, [](const auto& in) {
    return matmul(in[0].expand({3, 4}), in[1]);
  });
}

TEST(MatmulGradcheck, MatmulUsedTwice) {
  // x·W·W: W gets the gradient of both uses.
  expect_gradcheck({2, 3}, {3, 3},
                   [](const auto& in) { return matmul(matmul(in[0], in[1]), in[1]); });
}

TEST(MatmulBackward, GradientsOfASmallProduct) {
  // y = sum(A·B): dA = 1·Bᵀ (row sums of B in every row), dB = Aᵀ·1 (column sums of A).
  Tensor a = tensor({{1, 2}, {3, 4}}).requires_grad_(),
         b = tensor({{5, 6}, {7, 8}}).requires_grad_();
  matmul(a, b).sum().backward();
  EXPECT_TRUE(testing::tensors_equal(a.grad(), tensor({{11, 15}, {11, 15}})));
  EXPECT_TRUE(testing::tensors_equal(b.grad(), tensor({{4, 4}, {6, 6}})));
}

TEST(MatmulBackward, OnlyRequestedGradients) {
  Tensor a = random_leaf({3, 4}, 41), b = random64({4, 2}, 42);
  Tensor out = matmul(a, b);
  ASSERT_TRUE(out.requires_grad());
  out.sum().backward();
  EXPECT_TRUE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  EXPECT_EQ(a.grad().shape(), (Shape{3, 4}));

  Tensor c = random64({3, 4}, 43), d = random_leaf({2, 4, 2}, 44);
  matmul(c, d).sum().backward();
  EXPECT_EQ(d.grad().shape(), (Shape{2, 4, 2}));
}

TEST(MatmulBackward, GradientShapesMatchTheInputs) {
  // Vectors and broadcast batches get gradients of their own shape, not of the result's.
  for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{
           {{4}, {4}}, {{4}, {2, 4, 3}}, {{2, 3, 4}, {4}}, {{2, 1, 3, 4}, {5, 4, 2}}}) {
    Tensor a = random_leaf(sa, 45), b = random_leaf(sb, 46);
    matmul(a, b).sum().backward();
    EXPECT_EQ(a.grad().shape(), sa);
    EXPECT_EQ(b.grad().shape(), sb);
  }
}

TEST(MatmulBackward, NoGraphUnderNoGrad) {
  Tensor a = random_leaf({3, 4}, 47), b = random_leaf({4, 2}, 48);
  NoGradGuard no_grad;
  Tensor out = matmul(a, b);
  EXPECT_FALSE(out.requires_grad());
  EXPECT_EQ(out.grad_fn(), nullptr);
}

// ---- errors -----------------------------------------------------------------------------------

TEST(MatmulErrors, InnerSizesMustMatch) {
  EXPECT_SG_ERROR(matmul(zeros({2, 3}), zeros({4, 5})),
                  "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  EXPECT_SG_ERROR(matmul(zeros({3}), zeros({4})),
                  "matmul: shapes [3] and [4] cannot be multiplied (3 != 4)");
  EXPECT_SG_ERROR(matmul(zeros({2, 3}), zeros({2})),
                  "matmul: shapes [2, 3] and [2] cannot be multiplied (3 != 2)");
  EXPECT_SG_ERROR(matmul(zeros({3}), zeros({2, 2, 5})),
                  "matmul: shapes [3] and [2, 2, 5] cannot be multiplied (3 != 2)");
}

TEST(MatmulErrors, BatchDimsMustBroadcast) {
  EXPECT_SG_ERROR(matmul(zeros({2, 3, 4}), zeros({3, 4, 5})),
                  "matmul: shapes [2, 3, 4] and [3, 4, 5] cannot be multiplied: batch dims [2] "
                  "and [3] cannot be broadcast (2 vs 3)");
}

TEST(MatmulErrors, ZeroDimInputs) {
  EXPECT_SG_ERROR(matmul(scalar_tensor(2.0), zeros({3})),
                  "matmul: both arguments need at least 1 dimension, got shapes [] (0-D) and [3] "
                  "(1-D)");
  EXPECT_SG_ERROR(matmul(zeros({3}), scalar_tensor(2.0)), "matmul: both arguments need at least 1");
}

TEST(MatmulErrors, Dtypes) {
  EXPECT_SG_ERROR(matmul(zeros({2, 3}), zeros({3, 2}, kFloat64)),
                  "matmul: expected both float32, got float32 and float64");
  EXPECT_SG_ERROR(matmul(zeros({2, 3}, kInt64), zeros({3, 2}, kInt64)),
                  "matmul: expected a float32 or float64 tensor, got int64");
  EXPECT_SG_ERROR(matmul(zeros({2, 3}), zeros({3, 2}, kBool)),
                  "matmul: expected a float32 or float64 tensor, got bool");
}

TEST(MatmulErrors, UndefinedTensor) {
  EXPECT_SG_ERROR(matmul(Tensor(), zeros({3})), "matmul: got an undefined tensor");
}

// ---- backward against PyTorch (float64, from a random upstream gradient) ----------------------

TEST(MatmulBackward, MatchesPyTorchOnEveryRankCombination) {
  using In = const testing::GoldenInputs&;
  auto product = [](In in) { return matmul(in.at("a"), in.at("b")); };
  testing::GoldenOps ops;
  for (const char* name :
       {"grad_dot", "grad_matrix_matrix", "grad_vector_matrix", "grad_matrix_vector",
        "grad_vector_batched", "grad_batched_vector", "grad_batched_batched", "grad_matrix_batched",
        "grad_broadcast_batch", "grad_broadcast_both"}) {
    ops[name] = product;
  }
  ops["grad_transposed_both"] = [](In in) { return matmul(in.at("a").t(), in.at("b").t()); };
  testing::expect_backward_goldens("matmul", ops);
}

}  // namespace
}  // namespace sg
