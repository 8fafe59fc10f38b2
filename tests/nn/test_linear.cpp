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

// sg::fused_linear (autograd/ops/linear.cpp), which the module runs, against nn::linear, the same
// math composed from matmul and add: values and every gradient, on the shapes a model feeds it.
TEST(LinearFused, AgreesWithTheComposedLinear) {
  struct Case {
    Shape x;
    bool transposed;  // x given as a transposed view: its rows are not laid end to end
  };
  for (const Case& c : {Case{{4, 3}, false}, Case{{2, 5, 3}, false}, Case{{3}, false},
                        Case{{6, 3}, true}, Case{{0, 3}, false}}) {
    for (DType dtype : {kFloat32, kFloat64}) {
      Tensor x0 = random_leaf(c.x, 1).to(dtype);
      if (c.transposed) x0 = random_leaf({c.x[1], c.x[0]}, 1).to(dtype).t();
      Tensor w0 = random_leaf({2, 3}, 2).to(dtype), b0 = random_leaf({2}, 3).to(dtype);
      auto leaves = [&] {
        return std::vector<Tensor>{x0.detach().requires_grad_(), w0.detach().requires_grad_(),
                                   b0.detach().requires_grad_()};
      };
      std::vector<Tensor> fused_in = leaves(), composed_in = leaves();
      Tensor fused = fused_linear(fused_in[0], fused_in[1], fused_in[2]);
      Tensor composed = linear(composed_in[0], composed_in[1], composed_in[2]);
      ASSERT_EQ(fused.shape(), composed.shape());
      const double tol = dtype == kFloat32 ? 1e-6 : 1e-12;
      EXPECT_TRUE(tensors_near(fused, composed, tol, tol)) << fmt::format("{}", c.x);
      Tensor weights = random_leaf(fused.shape(), 4).to(dtype).detach();
      (fused * weights).sum().backward();
      (composed * weights).sum().backward();
      for (size_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(fused_in[i].grad().defined()) << fmt::format("{}", c.x) << " input " << i;
        EXPECT_TRUE(tensors_near(fused_in[i].grad(), composed_in[i].grad(), tol, tol))
            << fmt::format("{}", c.x) << " input " << i;
      }
    }
  }
}

TEST(LinearFused, GradcheckAndWithoutBias) {
  EXPECT_GRADCHECK([](const auto& in) { return fused_linear(in[0], in[1], in[2]); },
                   {random_leaf({2, 4, 3}), random_leaf({5, 3}, 1), random_leaf({5}, 2)});
  EXPECT_GRADCHECK([](const auto& in) { return fused_linear(in[0].t(), in[1], in[2]); },
                   {random_leaf({3, 4}, 3), random_leaf({5, 3}, 4), random_leaf({5}, 5)});
  EXPECT_GRADCHECK([](const auto& in) { return fused_linear(in[0], in[1]); },
                   {random_leaf({4, 3}, 6), random_leaf({2, 3}, 7)});
  // Only the gradients that are needed are computed: a frozen weight gets none.
  Tensor x = random_leaf({4, 3}, 8), w = random_leaf({2, 3}, 9).detach(), b = random_leaf({2}, 10);
  fused_linear(x, w, b).sum().backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  EXPECT_TRUE(tensors_near(b.grad(), full({2}, 4.0, kFloat64), 0, 0));
}

TEST(LinearFused, ErrorsNameTheShapes) {
  Tensor w = zeros({2, 3}), b = zeros({2});
  EXPECT_SG_ERROR(
      fused_linear(zeros({4, 5}), w, b),
      "fused_linear: input of shape [4, 5] needs a last dim of 3 (the weight is [2, 3])");
  EXPECT_SG_ERROR(fused_linear(zeros({4, 3}), w, zeros({3})),
                  "fused_linear: bias must be [2] for a weight of shape [2, 3], got [3]");
  EXPECT_SG_ERROR(fused_linear(zeros({4, 3}), zeros({2, 3}, kFloat64), b),
                  "fused_linear: input, weight and bias must have one dtype, got float32, float64 "
                  "and float32");
  EXPECT_SG_ERROR(fused_linear(zeros({4, 3}, kInt64), w, b),
                  "fused_linear: expected a float32 or float64 tensor, got int64");
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
