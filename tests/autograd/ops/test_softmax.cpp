// Tests for autograd/ops/softmax.cpp: values against PyTorch (including logits of 1000 and rows
// of -inf), gradients by gradcheck, and errors.
#include <cmath>

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

}  // namespace
}  // namespace sg
