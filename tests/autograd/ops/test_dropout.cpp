// Tests for autograd/ops/dropout.cpp: statistics, eval mode, reproducibility, gradient, errors.
#include <cmath>

#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::tensors_equal;
using testing::tensors_near;

TEST(DropoutTraining, ZeroesAboutPAndPreservesTheMean) {
  manual_seed(123);
  const int64_t n = 200000;
  const double p = 0.3;
  Tensor x = ones({n}, kFloat64);
  Tensor y = dropout(x, p);
  std::vector<double> v = y.to_vector<double>();
  int64_t zeros_seen = 0;
  for (double e : v) {
    if (e == 0.0) {
      ++zeros_seen;
    } else {
      EXPECT_NEAR(e, 1.0 / (1.0 - p), 1e-12);  // survivors are scaled, not left at 1
    }
  }
  // Binomial(n, p): the standard deviation of the zero fraction is sqrt(p (1-p) / n) ~ 0.001.
  EXPECT_NEAR(static_cast<double>(zeros_seen) / n, p, 0.005);
  EXPECT_NEAR(y.mean().item<double>(), 1.0, 0.01);
}

TEST(DropoutTraining, OffInEvalAndForZeroP) {
  Tensor x = randn({4, 5});
  EXPECT_TRUE(dropout(x, 0.5, /*training=*/false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0).is_same(x));
}

TEST(DropoutTraining, PEqualOneGivesZerosAndZeroGradient) {
  Tensor x = randn({3, 4}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = dropout(x, 1.0);
  EXPECT_TRUE(tensors_equal(y, zeros({3, 4}, kFloat64)));
  y.sum().backward();
  EXPECT_TRUE(tensors_equal(x.grad(), zeros({3, 4}, kFloat64)));
}

TEST(DropoutTraining, ReproducibleWithManualSeed) {
  Tensor x = ones({64});
  manual_seed(7);
  Tensor a = dropout(x, 0.5);
  manual_seed(7);
  Tensor b = dropout(x, 0.5);
  Tensor c = dropout(x, 0.5);  // the stream moved on: a different mask
  EXPECT_TRUE(tensors_equal(a, b));
  EXPECT_FALSE(tensors_equal(a, c));
}

TEST(DropoutGrad, GradientIsTheScaledMask) {
  manual_seed(3);
  Tensor x = randn({6, 7}, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = dropout(x, 0.4);
  y.sum().backward();
  // Where y kept x, dy/dx = 1/(1-p); where it dropped, 0. So grad ⊙ x == y exactly.
  EXPECT_TRUE(tensors_near(x.grad() * x.detach(), y.detach(), 1e-12));
  for (double g : x.grad().to_vector<double>()) {
    EXPECT_TRUE(g == 0.0 || std::abs(g - 1.0 / 0.6) < 1e-12) << g;
  }
}

TEST(DropoutGrad, Gradcheck) {
  // A fixed mask per evaluation: reseed inside fn so every finite-difference pass drops the same
  // elements. Non-contiguous input through the transpose.
  Tensor x = testing::random_leaf({3, 5});
  EXPECT_GRADCHECK(
      [](const auto& in) {
        manual_seed(11);
        return dropout(in[0].t(), 0.25);
      },
      {x});
}

TEST(DropoutErrors, ProbabilityOutOfRangeAndIntegerInput) {
  EXPECT_SG_ERROR(dropout(ones({2}), 1.5), "dropout: probability p must be in [0, 1], got 1.5");
  EXPECT_SG_ERROR(dropout(ones({2}), -0.1), "dropout: probability p must be in [0, 1], got -0.1");
  EXPECT_SG_ERROR(dropout(ones({2}, kInt64), 0.5),
                  "dropout: expected a floating point tensor, got int64");
}

}  // namespace
}  // namespace sg
