// Tests for autograd/ops/softmax.cpp: values against PyTorch (including logits of 1000 and rows
// of -inf), gradients by gradcheck, and errors; masked_softmax against PyTorch and against the
// composition it replaces (where, softmax, where), forward and backward.
#include <cmath>
#include <limits>

#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::golden;
using testing::random_leaf;
using testing::tensors_near;

TEST(SoftmaxForward, MatchesPyTorch) {
  for (const char* name : {"last_dim", "middle_dim", "first_dim", "large_logits",
                           "large_negative_logits", "masked_rows"}) {
    const auto& c = golden("softmax", name);
    const int64_t dim = c.param<int64_t>("dim");
    EXPECT_TRUE(tensors_near(softmax(c.input("x"), dim), c.output("softmax"), 1e-6)) << name;
    EXPECT_TRUE(tensors_near(log_softmax(c.input("x"), dim), c.output("log_softmax"), 1e-5))
        << name;
  }
}

TEST(SoftmaxForward, TransposedViewMatchesPyTorch) {
  const auto& c = golden("softmax", "transposed");
  Tensor xt = c.input("x").t();
  ASSERT_FALSE(xt.is_contiguous());
  EXPECT_TRUE(tensors_near(xt.softmax(1), c.output("softmax"), 1e-6));
  EXPECT_TRUE(tensors_near(xt.log_softmax(1), c.output("log_softmax"), 1e-5));
}

TEST(SoftmaxForward, LargeLogitsStayFinite) {
  Tensor x = tensor({{1000, 1000, 999}, {-1000, -1000, -1000}});
  Tensor y = softmax(x, 1);
  for (float v : y.to_vector<float>()) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(y.at<float>({0, 0}), 1.0 / (2.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(y.at<float>({1, 2}), 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(log_softmax(x, 1).at<float>({1, 0}), -std::log(3.0), 1e-5);
}

// Rows of at most 64 floats take the AVX-512 kernels where the CPU has them (short_softmax.cpp),
// longer ones the portable loops: both against float64, across 1 to 4 registers a row, groups
// of rows and a tail, with a -inf entry (log p = -inf there) and a row of -inf (NaN, as PyTorch).
TEST(SoftmaxForward, Float32RowsOfEveryLengthMatchFloat64) {
  manual_seed(5);
  for (int64_t D : {1, 5, 11, 16, 17, 33, 64, 65, 130}) {
    SCOPED_TRACE(fmt::format("D {}", D));
    Tensor x = randn({13, D}) * 4.0;
    Tensor x64 = x.to(kFloat64);
    EXPECT_TRUE(tensors_near(log_softmax(x, 1).to(kFloat64), log_softmax(x64, 1), 1e-5, 1e-5));
    EXPECT_TRUE(tensors_near(softmax(x, 1).to(kFloat64), softmax(x64, 1), 1e-6, 1e-5));
  }
  Tensor x = tensor({{1.0, -std::numeric_limits<double>::infinity(), 2.0}});
  Tensor lp = log_softmax(x, 1);
  EXPECT_TRUE(std::isinf(lp.at<float>({0, 1})) && lp.at<float>({0, 1}) < 0);
  EXPECT_NEAR(lp.at<float>({0, 2}), -std::log1p(std::exp(-1.0)), 1e-6);
  Tensor all_inf = full({1, 4}, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(log_softmax(all_inf, 1).at<float>({0, 0})));
}

TEST(SoftmaxForward, FullyMaskedRowIsNanLikePyTorch) {
  Tensor x = tensor({{-INFINITY, -INFINITY}, {0, -INFINITY}});
  Tensor y = softmax(x, -1);
  EXPECT_TRUE(std::isnan(y.at<float>({0, 0})));
  EXPECT_TRUE(std::isnan(y.at<float>({0, 1})));
  EXPECT_FLOAT_EQ(y.at<float>({1, 0}), 1.0f);
  EXPECT_FLOAT_EQ(y.at<float>({1, 1}), 0.0f);
}

TEST(SoftmaxForward, ZeroDimAndEmptyInputs) {
  EXPECT_FLOAT_EQ(softmax(scalar_tensor(3.0), 0).item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(log_softmax(scalar_tensor(3.0), -1).item<float>(), 0.0f);
  EXPECT_EQ(softmax(zeros({0, 4}), 1).shape(), (Shape{0, 4}));
}

TEST(SoftmaxGrad, Softmax) {
  Tensor x = random_leaf({3, 4, 5});
  for (int64_t dim : {0, 1, -1}) {
    EXPECT_GRADCHECK([dim](const auto& in) { return softmax(in[0], dim); }, {x});
  }
  // Non-contiguous input and a broadcast one.
  EXPECT_GRADCHECK([](const auto& in) { return softmax(in[0].transpose(0, 2), 1); }, {x});
  Tensor b = random_leaf({1, 5}, 1);
  EXPECT_GRADCHECK([](const auto& in) { return softmax(in[0] + in[1], -1); }, {x, b});
}

TEST(SoftmaxGrad, LogSoftmax) {
  Tensor x = random_leaf({3, 4, 5});
  for (int64_t dim : {0, 1, -1}) {
    EXPECT_GRADCHECK([dim](const auto& in) { return log_softmax(in[0], dim); }, {x});
  }
  EXPECT_GRADCHECK([](const auto& in) { return log_softmax(in[0].slice(2, 0, 5, 2), 2); }, {x});
}

TEST(SoftmaxGrad, MaskedPositionsGetZeroGradient) {
  Tensor x = tensor({{0.5, -INFINITY, 1.0}}, kFloat64).requires_grad_();
  Tensor w = tensor({{1, 2, 3}}, kFloat64);
  (softmax(x, 1) * w).sum().backward();
  EXPECT_EQ(x.grad().at<double>({0, 1}), 0.0);
  EXPECT_TRUE(std::isfinite(x.grad().at<double>({0, 0})));
}

TEST(SoftmaxErrors, RejectsIntegerTensorsAndBadDims) {
  EXPECT_SG_ERROR(softmax(ones({2, 3}, kInt64), 1),
                  "softmax: expected a floating point tensor, got int64");
  EXPECT_SG_ERROR(log_softmax(ones({2}, kBool), 0),
                  "log_softmax: expected a floating point tensor, got bool");
  EXPECT_SG_ERROR(softmax(ones({2, 3}), 2), "softmax: dim 2 out of range for a 2-D tensor");
  EXPECT_SG_ERROR(log_softmax(ones({2, 3}), -3), "log_softmax: dim -3 out of range");
}

// ---- masked_softmax ----

// What masked_softmax fuses, written with the ops it replaces (attention did exactly this).
Tensor masked_softmax_composed(const Tensor& x, const Tensor& mask) {
  Tensor lowest = full({}, std::numeric_limits<float>::lowest(), x.options());
  return where(mask, softmax(where(mask, x, lowest), -1), zeros({}, x.options()));
}

TEST(SoftmaxMasked, MatchesPyTorch) {
  for (const char* name : {"masked", "masked_padding", "masked_causal_long"}) {
    const auto& c = golden("softmax", name);
    EXPECT_TRUE(tensors_near(masked_softmax(c.input("x"), c.input("mask")), c.output("out"), 1e-6))
        << name;
  }
}

TEST(SoftmaxMasked, FullyMaskedRowsAreZeroNotNan) {
  Tensor x = tensor({{1, 2, 3}, {-INFINITY, 0, 5}}).requires_grad_();
  Tensor mask = from_vector(std::vector<bool>{false, false, false, true, true, false}, {2, 3});
  Tensor y = masked_softmax(x, mask);
  EXPECT_TRUE(tensors_near(y.select(0, 0), zeros({3}), 0, 0));
  // Row 1 keeps -inf and 0: all the weight goes to the 0, none to the masked 5.
  EXPECT_TRUE(tensors_near(y.select(0, 1), tensor({{0, 1, 0}}).view({3}), 0, 0));
  (y * tensor({{1, 2, 3}, {4, 5, 6}})).sum().backward();
  for (double g : x.grad().to_vector<double>()) EXPECT_EQ(g, 0.0);  // y is one-hot or zero
}

TEST(SoftmaxMasked, MatchesTheComposedOpsForwardAndBackward) {
  // Short rows (the kernel's block path) and long ones; masks broadcast from several shapes.
  for (int64_t S : {7, 45}) {
    Tensor x = randn({2, 3, 4, S}).requires_grad_();
    Tensor g = randn({2, 3, 4, S});
    for (const Shape& mask_shape :
         {Shape{2, 1, 1, S}, Shape{1, 1, 4, S}, Shape{4, S}, Shape{S}, Shape{2, 3, 4, S}}) {
      Tensor mask = rand(mask_shape).lt(0.6);
      Tensor xc = x.detach().requires_grad_();
      Tensor y = masked_softmax(x, mask), yc = masked_softmax_composed(xc, mask);
      EXPECT_TRUE(tensors_near(y, yc, 1e-6, 1e-5)) << S << " " << mask_shape.size();
      x.set_grad(Tensor());
      (y * g).sum().backward();
      (yc * g).sum().backward();
      EXPECT_TRUE(tensors_near(x.grad(), xc.grad(), 1e-6, 1e-5)) << S << " " << mask_shape.size();
    }
  }
}

TEST(SoftmaxMasked, NonLastDimAndNonContiguousInput) {
  // Along dim 0 (the composed fallback) and on a transposed view (copied to rows first).
  Tensor x = randn({5, 3});
  Tensor mask = rand({5, 3}).lt(0.7);
  Tensor along0 = masked_softmax(x, mask, 0);
  EXPECT_TRUE(
      tensors_near(along0, masked_softmax(x.t().contiguous(), mask.t().contiguous()).t(), 1e-6));
  EXPECT_TRUE(tensors_near(masked_softmax(x.t(), mask.t()),
                           masked_softmax_composed(x.t().contiguous(), mask.t()), 1e-6));
}

TEST(SoftmaxMasked, Gradcheck) {
  Tensor mask = from_vector(std::vector<bool>{true, false, true, true, false, false, true, true,
                                              true, false, true, false},
                            {3, 4});
  EXPECT_GRADCHECK([&](const auto& in) { return masked_softmax(in[0], mask); },
                   {random_leaf({2, 3, 4})});
  EXPECT_GRADCHECK([&](const auto& in) { return masked_softmax(in[0].transpose(0, 1), mask); },
                   {random_leaf({3, 2, 4}, 1)});
  EXPECT_GRADCHECK([&](const auto& in) { return masked_softmax(in[0], mask.t(), 0); },
                   {random_leaf({4, 3}, 2)});
}

TEST(SoftmaxMasked, Errors) {
  Tensor mask = ones({2, 3}, kBool);
  EXPECT_SG_ERROR(masked_softmax(ones({2, 3}, kInt64), mask),
                  "masked_softmax: expected a floating point tensor, got int64");
  EXPECT_SG_ERROR(masked_softmax(ones({2, 3}), ones({2, 3})),
                  "masked_softmax: mask must be a bool tensor, got float32");
  EXPECT_SG_ERROR(masked_softmax(ones({2, 3}), ones({4, 3}, kBool)),
                  "masked_softmax: shapes [4, 3] and [2, 3] cannot be broadcast");
  EXPECT_SG_ERROR(
      masked_softmax(ones({3}), ones({2, 3}, kBool)),
      "masked_softmax: mask of shape [2, 3] cannot be broadcast to the input's shape [3]");
  EXPECT_SG_ERROR(masked_softmax(ones({2, 3}), mask, 2),
                  "masked_softmax: dim 2 out of range for a 2-D tensor");
}

// ---- backward against PyTorch (float64, from a random upstream gradient) ----------------------

TEST(SoftmaxBackward, MatchesPyTorch) {
  using In = const testing::GoldenInputs&;
  auto masked = [](In in) { return masked_softmax(in.at("x"), in.at("mask")); };
  testing::expect_backward_goldens(
      "softmax",
      {
          {"softmax_grad_last_dim", [](In in) { return in.at("x").softmax(-1); }},
          {"softmax_grad_middle_dim", [](In in) { return in.at("x").softmax(1); }},
          {"softmax_grad_masked_row", [](In in) { return in.at("x").softmax(1); }},
          {"log_softmax_grad_last_dim", [](In in) { return in.at("x").log_softmax(-1); }},
          {"log_softmax_grad_middle_dim", [](In in) { return in.at("x").log_softmax(1); }},
          {"log_softmax_grad_masked_row", [](In in) { return in.at("x").log_softmax(1); }},
          {"masked_grad", masked},
          {"masked_grad_empty_row", masked},
      });
}

}  // namespace
}  // namespace sg
