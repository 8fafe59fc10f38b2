// Tests for autograd/ops/reduce.cpp: forward values against PyTorch, gradients by gradcheck,
// edge cases (0-d, keepdim, negative dims, ties) and error messages.
#include <gtest/gtest-spi.h>

#include <cmath>
#include <string>
#include <type_traits>

#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::golden;
using testing::random_leaf;
using testing::tensors_equal;
using testing::tensors_near;
using DimList = std::vector<int64_t>;  // dims as the golden files store them

// ---- forward against PyTorch (float32) -------------------------------------------------------

TEST(ReduceForward, SumMatchesPyTorch) {
  for (const char* name : {"sum_dim1", "sum_all", "sum_negative_dims_keepdim", "sum_long_row"}) {
    const auto& c = golden("reduce", name);
    Tensor out = sum(c.input("x"), c.param<DimList>("dims"), c.param<bool>("keepdim"));
    EXPECT_TRUE(tensors_near(out, c.output(), 1e-5, 1e-5)) << name;
  }
}

TEST(ReduceForward, SumOfTransposedViewMatchesPyTorch) {
  const auto& c = golden("reduce", "sum_transposed_dim1");
  EXPECT_TRUE(tensors_near(c.input("x").t().sum({1}), c.output(), 1e-6));
}

TEST(ReduceForward, SumOfInt64AndBoolIsInt64) {
  const auto& c = golden("reduce", "sum_int64");
  Tensor out = sum(c.input("x"), {0});
  EXPECT_EQ(out.dtype(), kInt64);
  EXPECT_TRUE(tensors_equal(out, c.output()));

  Tensor flags = tensor({1, 0, 1, 1}, kBool);
  Tensor count = flags.sum();
  EXPECT_EQ(count.dtype(), kInt64);
  EXPECT_EQ(count.item<int64_t>(), 3);
}

TEST(ReduceForward, MeanMatchesPyTorch) {
  for (const char* name : {"mean_dims02", "mean_keepdim"}) {
    const auto& c = golden("reduce", name);
    Tensor out = mean(c.input("x"), c.param<DimList>("dims"), c.param<bool>("keepdim"));
    EXPECT_TRUE(tensors_near(out, c.output(), 1e-6)) << name;
  }
}

TEST(ReduceForward, VarMatchesPyTorch) {
  for (const char* name : {"var_dim1", "var_population_dims01_keepdim"}) {
    const auto& c = golden("reduce", name);
    Tensor out = var(c.input("x"), c.param<DimList>("dims"), c.param<int64_t>("correction"),
                     c.param<bool>("keepdim"));
    EXPECT_TRUE(tensors_near(out, c.output(), 1e-6)) << name;
  }
}

TEST(ReduceForward, AmaxAminMatchPyTorch) {
  const auto& a = golden("reduce", "amax_dim1");
  EXPECT_TRUE(tensors_equal(amax(a.input("x"), {1}), a.output()));
  const auto& b = golden("reduce", "amin_dims01_keepdim");
  EXPECT_TRUE(tensors_equal(amin(b.input("x"), {0, 1}, true), b.output()));
}

TEST(ReduceForward, MaxMinAlongDimMatchPyTorch) {
  const auto& a = golden("reduce", "max_dim0");
  auto [values, indices] = max(a.input("x"), 0);
  EXPECT_TRUE(tensors_equal(values, a.output("values")));
  EXPECT_TRUE(tensors_equal(indices, a.output("indices")));
  EXPECT_EQ(indices.dtype(), kInt64);

  const auto& b = golden("reduce", "min_dim_neg2_keepdim");
  auto [min_values, min_indices] = min(b.input("x"), -2, true);
  EXPECT_TRUE(tensors_equal(min_values, b.output("values")));
  EXPECT_TRUE(tensors_equal(min_indices, b.output("indices")));
}

TEST(ReduceForward, ArgmaxArgminMatchPyTorch) {
  const auto& c = golden("reduce", "argmax_argmin_dim1");
  Tensor x = c.input("x");
  EXPECT_TRUE(tensors_equal(argmax(x, 1), c.output("argmax")));
  EXPECT_TRUE(tensors_equal(argmin(x, 1), c.output("argmin")));
  EXPECT_TRUE(tensors_equal(argmax(x, 1, true), c.output("argmax").unsqueeze(1)));
}

// ---- edge cases --------------------------------------------------------------------------------

TEST(ReduceEdge, KeepdimAndNegativeDimsGiveTheSameValues) {
  Tensor x = randn({2, 3, 4});
  Tensor kept = x.sum({-1, 0}, true);
  EXPECT_EQ(kept.shape(), (Shape{1, 3, 1}));
  EXPECT_TRUE(tensors_near(kept.view({3}), x.sum({0, 2}), 1e-6));
  EXPECT_EQ(x.sum({1}).shape(), (Shape{2, 4}));
  EXPECT_EQ(x.sum().shape(), Shape{});
  EXPECT_EQ(x.mean({0, 1, 2}, true).shape(), (Shape{1, 1, 1}));
}

TEST(ReduceEdge, ZeroDimInputsGiveZeroDimResults) {
  Tensor s = scalar_tensor(2.5);
  EXPECT_EQ(s.sum().shape(), Shape{});
  EXPECT_DOUBLE_EQ(s.sum({0}).item<double>(), 2.5);
  EXPECT_DOUBLE_EQ(s.mean({-1}, true).item<double>(), 2.5);
  EXPECT_EQ(amax(s).shape(), Shape{});
  auto [values, indices] = s.max(0);
  EXPECT_EQ(values.shape(), Shape{});
  EXPECT_DOUBLE_EQ(values.item<double>(), 2.5);
  EXPECT_EQ(indices.item<int64_t>(), 0);
}

TEST(ReduceEdge, EmptyDimsSumToZeroAndMeanToNan) {
  Tensor x = zeros({0, 3});
  EXPECT_TRUE(tensors_equal(x.sum({0}), zeros({3})));
  EXPECT_TRUE(std::isnan(x.mean().item<double>()));
}

TEST(ReduceEdge, VarOfOneElementIsNanUnbiasedAndZeroPopulation) {
  Tensor x = tensor({3.0});
  EXPECT_TRUE(std::isnan(var(x).item<double>()));
  EXPECT_DOUBLE_EQ(var(x, {}, 0).item<double>(), 0.0);
}

TEST(ReduceEdge, MaxAlongDimPicksTheFirstOfTies) {
  Tensor x = tensor({{1, 5, 5}, {7, 7, 2}});
  auto [values, indices] = x.max(1);
  EXPECT_TRUE(tensors_equal(values, tensor({5, 7})));
  EXPECT_TRUE(tensors_equal(indices, tensor({1, 0}, kInt64)));
}

TEST(ReduceEdge, ArgmaxHasNoGradient) {
  Tensor x = random_leaf({3, 4});
  EXPECT_FALSE(argmax(x, 1).requires_grad());
  EXPECT_EQ(argmax(x, 1).dtype(), kInt64);
}

// ---- gradients ---------------------------------------------------------------------------------

TEST(ReduceGrad, Sum) {
  Tensor x = random_leaf({3, 4, 2});
  EXPECT_GRADCHECK([](const auto& in) { return sum(in[0]); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return sum(in[0], {1}); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return sum(in[0], {-1, 0}, true); }, {x});
  // Non-contiguous input: the permuted view of a transpose.
  EXPECT_GRADCHECK([](const auto& in) { return sum(in[0].transpose(0, 2), {1}); }, {x});
  // Broadcast into the sum: the engine sums the gradient of the expanded input back.
  Tensor b = random_leaf({4, 1}, 1);
  EXPECT_GRADCHECK([](const auto& in) { return sum(in[0] * in[1], {0}); }, {x, b});
}

TEST(ReduceGrad, SumOfZeroDim) {
  Tensor s = random_leaf({});
  EXPECT_GRADCHECK([](const auto& in) { return sum(in[0], {0}, true) * 3.0; }, {s});
}

TEST(ReduceGrad, Mean) {
  Tensor x = random_leaf({3, 5});
  EXPECT_GRADCHECK([](const auto& in) { return mean(in[0]); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return mean(in[0].t(), {1}, true); }, {x});
  Tensor y = random_leaf({3, 5});
  mean(y).backward();
  EXPECT_TRUE(tensors_near(y.grad(), full({3, 5}, 1.0 / 15, kFloat64), 1e-12));
}

TEST(ReduceGrad, Var) {
  Tensor x = random_leaf({4, 5});
  EXPECT_GRADCHECK([](const auto& in) { return var(in[0]); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return var(in[0], {1}, 0, true); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return var(in[0].slice(1, 0, 5, 2), {0}); }, {x});
}

TEST(ReduceGrad, AmaxAmin) {
  Tensor x = random_leaf({3, 4});
  EXPECT_GRADCHECK([](const auto& in) { return amax(in[0], {1}); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return amin(in[0].t(), {0, 1}, true); }, {x});
}

TEST(ReduceGrad, AmaxSplitsTheGradientEvenlyAmongTies) {
  Tensor x = tensor({{1, 5, 5}, {7, 7, 7}}, kFloat64).requires_grad_();
  amax(x, {1}).sum().backward();
  EXPECT_TRUE(tensors_near(x.grad(), tensor({{0, 0.5, 0.5}, {1.0 / 3, 1.0 / 3, 1.0 / 3}}, kFloat64),
                           1e-12));
  Tensor y = tensor({2, -1, -1}, kFloat64).requires_grad_();
  amin(y).backward();
  EXPECT_TRUE(tensors_near(y.grad(), tensor({0.0, 0.5, 0.5}, kFloat64), 1e-12));
}

TEST(ReduceGrad, MaxMinAlongDim) {
  Tensor x = random_leaf({3, 4, 2});
  EXPECT_GRADCHECK([](const auto& in) { return max(in[0], 1).first; }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return min(in[0], -1, true).first; }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return max(in[0].transpose(0, 1), 0).first; }, {x});
}

TEST(ReduceGrad, MaxAlongDimSendsTheGradientToTheIndexOnly) {
  // Unlike amax, ties are not split: the gradient goes to the index that max returned.
  Tensor x = tensor({{1, 5, 5}, {7, 7, 2}}, kFloat64).requires_grad_();
  x.max(1).first.sum().backward();
  EXPECT_TRUE(tensors_near(x.grad(), tensor({{0, 1, 0}, {1, 0, 0}}, kFloat64), 0));
}

// ---- one dim instead of a list, as in LibTorch: x.sum(-1, true) -------------------------------

static_assert(std::is_convertible_v<int, Dims> && std::is_convertible_v<int64_t, Dims>);
// x.sum(true) would quietly mean dim 1: a bool is not a dim (keepdim is the second argument).
static_assert(!std::is_convertible_v<bool, Dims> && !std::is_constructible_v<Dims, bool>);

TEST(ReduceSingleDim, MethodsAndFunctionsMatchPyTorch) {
  const auto& s = golden("reduce", "sum_dim1");
  EXPECT_TRUE(tensors_near(s.input("x").sum(1), s.output(), 1e-5, 1e-5));
  EXPECT_TRUE(tensors_near(sum(s.input("x"), 1), s.output(), 1e-5, 1e-5));
  const auto& m = golden("reduce", "mean_keepdim");  // dims [-1], keepdim
  EXPECT_TRUE(tensors_near(m.input("x").mean(-1, true), m.output(), 1e-6));
  EXPECT_TRUE(tensors_near(mean(m.input("x"), -1, true), m.output(), 1e-6));
  const auto& v = golden("reduce", "var_dim1");
  EXPECT_TRUE(tensors_near(v.input("x").var(1), v.output(), 1e-6));
  EXPECT_TRUE(tensors_near(var(v.input("x"), 1), v.output(), 1e-6));
  const auto& a = golden("reduce", "amax_dim1");
  EXPECT_TRUE(tensors_equal(a.input("x").amax(1), a.output()));
  EXPECT_TRUE(tensors_equal(amax(a.input("x"), 1), a.output()));
}

TEST(ReduceSingleDim, EveryWayOfWritingDimsAgrees) {
  Tensor x = randn({2, 3, 4});
  for (int64_t d : {0, 1, 2, -1, -3}) {
    for (bool keepdim : {false, true}) {
      EXPECT_TRUE(tensors_equal(x.sum(d, keepdim), x.sum({d}, keepdim)));
      EXPECT_TRUE(tensors_equal(x.sum(d, keepdim), sum(x, DimList{d}, keepdim)));
      EXPECT_TRUE(tensors_equal(x.mean(d, keepdim), mean(x, {d}, keepdim)));
      EXPECT_TRUE(tensors_equal(x.var(d, 0, keepdim), var(x, {d}, 0, keepdim)));
      EXPECT_TRUE(tensors_equal(x.amax(d, keepdim), amax(x, {d}, keepdim)));
      EXPECT_TRUE(tensors_equal(x.amin(d, keepdim), amin(x, {d}, keepdim)));
      EXPECT_TRUE(tensors_equal(amin(x, d, keepdim), x.amin({d}, keepdim)));
      EXPECT_TRUE(tensors_equal(var(x, d, 1, keepdim), x.var({d}, 1, keepdim)));
    }
  }
  EXPECT_EQ(x.sum(-1, true).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(x.mean(1).shape(), (Shape{2, 4}));
  EXPECT_EQ(x.var(-1, true).shape(), (Shape{2, 3}));  // LibTorch's x.var(-1, true): unbiased
  EXPECT_TRUE(tensors_equal(x.var(-1, true), x.var(-1, 1)));
  int dim = 1;  // an int variable converts too
  EXPECT_TRUE(tensors_equal(x.sum(dim), x.sum({1})));
  EXPECT_TRUE(tensors_equal(x.amax({0, 2}, true), amax(x, {0, 2}, true)));
}

TEST(ReduceSingleDim, EmptyBracesStillMeanAllDims) {
  // {} is the empty list (all dims), not dim 0: the reason dims is one type, not two overloads.
  Tensor x = randn({2, 3});
  EXPECT_EQ(x.sum({}).shape(), Shape{});
  EXPECT_TRUE(tensors_near(x.sum({}, true), x.sum().view({1, 1}), 1e-6));
  EXPECT_TRUE(tensors_near(var(x, {}, 0), var(x.flatten(), 0, 0), 1e-6));
  EXPECT_TRUE(tensors_equal(x.amax(), x.max()));
  EXPECT_TRUE(tensors_equal(x.amin({}, true), x.min().view({1, 1})));
}

TEST(ReduceSingleDim, Gradients) {
  Tensor x = random_leaf({3, 4});
  EXPECT_GRADCHECK([](const auto& in) { return in[0].sum(-1, true); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return in[0].mean(0); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return in[0].var(-1, 1, true); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return in[0].amax(1); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return in[0].amin(0, true); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return sum(in[0], 1); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return mean(in[0], -1, true); }, {x});
  // The gradient of a single-dim sum is g broadcast back along that dim.
  Tensor y = random_leaf({2, 3});
  (y.sum(-1, true) * tensor({{2.0}, {-1.0}}, kFloat64)).sum().backward();
  EXPECT_TRUE(tensors_near(y.grad(), tensor({{2.0, 2.0, 2.0}, {-1.0, -1.0, -1.0}}, kFloat64), 0));
}

TEST(ReduceSingleDim, ErrorsNameTheDim) {
  EXPECT_SG_ERROR(ones({2, 3}).sum(2), "sum: dim 2 out of range for a 2-D tensor");
  EXPECT_SG_ERROR(ones({2, 3}).mean(-3, true), "mean: dim -3 out of range");
  EXPECT_SG_ERROR(ones({2, 3}).amax(4), "amax: dim 4 out of range");
}

// ---- sum_to ------------------------------------------------------------------------------------

TEST(ReduceSumTo, SumsLeadingAndSizeOneDims) {
  Tensor g = ones({4, 2, 3});
  Tensor out = sum_to(g, {2, 1});
  EXPECT_EQ(out.shape(), (Shape{2, 1}));
  EXPECT_TRUE(tensors_equal(out, full({2, 1}, 12.0)));
  EXPECT_EQ(sum_to(g, {3}).shape(), Shape{3});
  EXPECT_EQ(sum_to(g, {}).shape(), Shape{});
  EXPECT_DOUBLE_EQ(sum_to(g, {}).item<double>(), 24.0);
  EXPECT_EQ(sum_to(g, {1, 1, 1}).shape(), (Shape{1, 1, 1}));
  EXPECT_TRUE(sum_to(g, {4, 2, 3}).is_same(g));  // nothing to sum: no copy
}

TEST(ReduceSumTo, Gradient) {
  Tensor x = random_leaf({2, 3, 4});
  EXPECT_GRADCHECK([](const auto& in) { return sum_to(in[0], {3, 1}); }, {x});
}

TEST(ReduceSumTo, RejectsShapesThatWereNotBroadcast) {
  EXPECT_SG_ERROR(sum_to(ones({2, 3}), {4}), "sum_to: cannot sum shape [2, 3] to [4]");
  EXPECT_SG_ERROR(sum_to(ones({3}), {2, 3}),
                  "sum_to: cannot sum shape [3] to the larger shape [2, 3]");
}

// ---- errors ------------------------------------------------------------------------------------

TEST(ReduceErrors, DimOutOfRange) {
  EXPECT_SG_ERROR(sum(ones({2, 3}), {2}), "sum: dim 2 out of range for a 2-D tensor");
  EXPECT_SG_ERROR(mean(ones({2, 3}), {-3}), "mean: dim -3 out of range");
  EXPECT_SG_ERROR(max(ones({2, 3}), 5), "max: dim 5 out of range");
  EXPECT_SG_ERROR(argmin(ones({2}), 1), "argmin: dim 1 out of range");
}

TEST(ReduceErrors, DuplicateDims) {
  EXPECT_SG_ERROR(sum(ones({2, 3}), {1, -1}), "sum: dim 1 appears more than once in dims [1, -1]");
  EXPECT_SG_ERROR(amax(ones({2, 3}), {0, 0}), "amax: dim 0 appears more than once");
}

TEST(ReduceErrors, MeanAndVarNeedFloatingPoint) {
  EXPECT_SG_ERROR(mean(ones({2}, kInt64)), "mean: expected a floating point tensor, got int64");
  EXPECT_SG_ERROR(var(ones({2}, kBool)), "var: expected a floating point tensor, got bool");
}

TEST(ReduceErrors, MaxOverAnEmptyDim) {
  EXPECT_SG_ERROR(amax(zeros({0, 3}), {0}), "amax: cannot reduce over dim 0 of size 0");
  EXPECT_SG_ERROR(max(zeros({2, 0}), 1), "max: cannot reduce over dim 1 of size 0 (shape [2, 0])");
  EXPECT_SG_ERROR(amin(ones({2}, kBool)), "amin: not defined for bool tensors");
}

// ---- backward against PyTorch (float64, from a random upstream gradient) ----------------------

TEST(ReduceBackward, AWrongGradientOrAnUntestedCaseFails) {
  // The same forward with twice the gradient: value sum(x, 1), gradient 2 g.
  auto doubled = [](const testing::GoldenInputs& in) {
    return in.at("x").sum(1) * 2.0 - in.at("x").detach().sum(1);
  };
  auto result = testing::backward_matches_pytorch(golden("reduce", "sum_grad_dim1"), doubled);
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("the gradient of x differs"), std::string::npos)
      << result.message();
  // With no ops named, each of the file's 12 backward cases is reported as untested.
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    testing::expect_backward_goldens("reduce", {});
  }
  ASSERT_EQ(failures.size(), 12);
  EXPECT_NE(std::string(failures.GetTestPartResult(0).message()).find("has no op in the test"),
            std::string::npos);
}

TEST(ReduceBackward, MatchesPyTorch) {
  using In = const testing::GoldenInputs&;
  testing::expect_backward_goldens(
      "reduce",
      {
          {"sum_grad_dim1", [](In in) { return in.at("x").sum(1); }},
          {"sum_grad_all", [](In in) { return in.at("x").sum(); }},
          {"sum_grad_dims_neg1_0_keepdim",
           [](In in) {
             return in.at("x").sum({-1, 0}, true);
           }},
          {"sum_grad_transposed_dim1", [](In in) { return in.at("x").t().sum(1); }},
          {"mean_grad_dims02",
           [](In in) {
             return in.at("x").mean({0, 2});
           }},
          {"mean_grad_dim_neg1_keepdim", [](In in) { return in.at("x").mean(-1, true); }},
          {"var_grad_dim1", [](In in) { return in.at("x").var(1); }},
          {"var_grad_population_dims01_keepdim",
           [](In in) {
             return in.at("x").var({0, 1}, 0, true);
           }},
          {"amax_grad_dim1_ties", [](In in) { return in.at("x").amax(1); }},
          {"amin_grad_dims01_keepdim_ties",
           [](In in) {
             return in.at("x").amin({0, 1}, true);
           }},
          {"max_grad_dim0", [](In in) { return in.at("x").max(0).first; }},
          {"min_grad_dim_neg2_keepdim", [](In in) { return in.at("x").min(-2, true).first; }},
      });
}

}  // namespace
}  // namespace sg
