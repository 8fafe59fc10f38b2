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

TEST(DropoutTraining, MaskComesFromTheDefaultGeneratorsStream) {
  // Element i survives when the i-th next_uniform() of the default generator, rounded to x's
  // dtype, is below 1 - p (the same numbers sg::rand() draws), and the generator moves past them.
  const int64_t n = 5000;
  const double p = 0.35;
  for (DType dtype : {kFloat32, kFloat64}) {
    manual_seed(2024);
    Tensor y = dropout(ones({50, n / 50}, dtype), p);
    Generator reference(2024);
    std::vector<double> expected(static_cast<size_t>(n));
    for (double& e : expected) {
      const double u = reference.next_uniform();
      const bool keep =
          dtype == kFloat32 ? static_cast<float>(u) < static_cast<float>(1.0 - p) : u < 1.0 - p;
      e = keep ? (dtype == kFloat32 ? static_cast<double>(1.0f / static_cast<float>(1.0 - p))
                                    : 1.0 / (1.0 - p))
               : 0.0;
    }
    EXPECT_TRUE(tensors_near(y.to(kFloat64), from_vector(expected, {50, n / 50}, kFloat64), 1e-6))
        << dtype;
    EXPECT_EQ(default_generator().state(), reference.state()) << dtype;
  }
}

TEST(DropoutTraining, MasksDifferBetweenCallsAndAcrossTheTensor) {
  manual_seed(5);
  Tensor x = ones({4, 256});
  Tensor a = dropout(x, 0.5), b = dropout(x, 0.5);
  // Two calls, and two rows of one call: 256 coin flips each, equal by chance with p = 2^-256.
  EXPECT_FALSE(tensors_equal(a, b));
  EXPECT_FALSE(tensors_equal(a.select(0, 0), a.select(0, 1)));
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
