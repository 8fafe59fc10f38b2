// Tests for nn/linear.cpp: values and gradients against torch.nn.Linear with the same weights,
// gradchecks, torch's initialisation statistics, printing and errors.
#include "nn/linear.h"

#include <algorithm>
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

TEST(LinearGolden, MatchesTorchValuesAndGradients) {
  for (const char* name : {"linear", "linear_no_bias"}) {
    const auto& c = golden("nn_layers", name);
    const bool with_bias = std::string(name) == "linear";
    Linear fc(c.param<int64_t>("in_features"), c.param<int64_t>("out_features"), with_bias);
    load_golden_parameters(fc, c);
    Tensor x = c.input("x").requires_grad_();
    Tensor out = fc(x);
    EXPECT_TRUE(tensors_near(out, c.output("out"), 1e-5, 1e-5)) << name;
    (out * c.input("w")).sum().backward();
    EXPECT_TRUE(tensors_near(x.grad(), c.output("grad_x"), 1e-5, 1e-5)) << name;
    EXPECT_TRUE(tensors_near(fc.weight.grad(), c.output("grad_weight"), 1e-5, 1e-5)) << name;
    if (with_bias) {
      EXPECT_TRUE(tensors_near(fc.bias.grad(), c.output("grad_bias"), 1e-5, 1e-5));
    } else {
      EXPECT_FALSE(fc.bias.defined());
      EXPECT_EQ(fc.parameters().size(), 1u);
    }
  }
}

TEST(LinearGrad, GradcheckInputWeightAndBias) {
  Linear fc(3, 2);
  fc.to(kFloat64);
  // Input, weight and bias all as gradcheck inputs, through the functional form.
  EXPECT_GRADCHECK([](const auto& in) { return linear(in[0], in[1], in[2]); },
                   {random_leaf({4, 3}), random_leaf({2, 3}, 1), random_leaf({2}, 2)});
  // The module on a [B, T, in] input and on a transposed (non-contiguous) one.
  EXPECT_GRADCHECK([&](const auto& in) { return fc(in[0]); }, {random_leaf({2, 5, 3}, 3)});
  EXPECT_GRADCHECK([&](const auto& in) { return fc(in[0].transpose(0, 1)); },
                   {random_leaf({3, 4}, 4)});
  // The gradient reaches the module's own parameters: d(sum(x Wᵀ + b))/db = number of rows.
  fc.zero_grad();  // the gradchecks above ran backward through fc too
  fc(ones({5, 3}, kFloat64)).sum().backward();
  EXPECT_TRUE(tensors_near(fc.bias.grad(), full({2}, 5.0, kFloat64), 0, 0));
}

TEST(LinearInit, UniformWithBoundOneOverSqrtFanIn) {
  // torch.nn.Linear: kaiming_uniform(a=√5) gives U(-1/√in, 1/√in) for the weight, the same bound
  // for the bias. For U(-b, b): max |w| ≈ b and variance b²/3.
  manual_seed(0);
  Linear fc(256, 512);
  const double bound = 1.0 / std::sqrt(256.0);
  std::vector<float> w = fc.weight.to_vector<float>();
  double max_abs = 0, mean = 0, sq = 0;
  for (float v : w) {
    max_abs = std::max(max_abs, static_cast<double>(std::abs(v)));
    mean += v;
    sq += static_cast<double>(v) * v;
  }
  mean /= static_cast<double>(w.size());
  const double var = sq / static_cast<double>(w.size()) - mean * mean;
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.99 * bound);
  EXPECT_NEAR(mean, 0.0, 0.01 * bound);
  EXPECT_NEAR(var, bound * bound / 3, 0.02 * bound * bound / 3);
  std::vector<float> b = fc.bias.to_vector<float>();
  const auto [lo, hi] = std::minmax_element(b.begin(), b.end());
  EXPECT_GE(*lo, -bound);
  EXPECT_LE(*hi, bound);
  EXPECT_GT(*hi - *lo, 1.8 * bound);  // spread over the whole range, not stuck at 0
}

TEST(LinearModule, ShapesNamesAndPrinting) {
  Linear fc(3, 4);
  EXPECT_EQ(fc.weight.shape(), (Shape{4, 3}));  // [out, in], as torch
  EXPECT_EQ(fc.bias.shape(), (Shape{4}));
  EXPECT_EQ(fc(zeros({3})).shape(), (Shape{4}));  // a single vector works too
  EXPECT_EQ(fc(zeros({2, 7, 3})).shape(), (Shape{2, 7, 4}));
  EXPECT_EQ(fc.str(), "Linear(in_features=3, out_features=4, bias=true)");
  EXPECT_EQ(Linear(3, 4, false).str(), "Linear(in_features=3, out_features=4, bias=false)");
  EXPECT_EQ(fc.num_parameters(), 16);
}

TEST(LinearErrors, NameTheShapes) {
  Linear fc(3, 4);
  EXPECT_SG_ERROR(fc(zeros({2, 4})),
                  "Linear: expected input with last dim 3 (in_features), got shape [2, 4]");
  EXPECT_SG_ERROR(Linear(0, 4), "Linear: in_features and out_features must be positive");
}

}  // namespace
}  // namespace sg::nn
