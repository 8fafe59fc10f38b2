// Tests for nn/layer_norm.cpp: values and gradients against torch.nn.LayerNorm (over one and two
// dims), gradchecks, the normalised statistics, init, printing and errors; and the fused op the
// module runs (sg::fused_layer_norm, autograd/ops/normalization.cpp) against the composed
// layer_norm(), values and all three gradients, plus its gradcheck and errors.
#include "nn/layer_norm.h"

#include "tests/nn/golden_parameters.h"
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::golden;
using sg::testing::load_golden_parameters;
using sg::testing::random_leaf;
using sg::testing::tensors_near;

TEST(LayerNormGolden, MatchesTorchValuesAndGradients) {
  for (const char* name : {"layer_norm", "layer_norm_2d"}) {
    const auto& c = golden("nn_layers", name);
    Shape normalized = std::string(name) == "layer_norm" ? Shape{6} : Shape{3, 4};
    LayerNorm norm(normalized, c.param<double>("eps"));
    load_golden_parameters(norm, c);
    Tensor x = c.input("x").requires_grad_();
    Tensor out = norm(x);
    EXPECT_TRUE(tensors_near(out, c.output("out"), 1e-5, 1e-5)) << name;
    (out * c.input("w")).sum().backward();
    EXPECT_TRUE(tensors_near(x.grad(), c.output("grad_x"), 1e-5, 1e-4)) << name;
    EXPECT_TRUE(tensors_near(norm.weight.grad(), c.output("grad_weight"), 1e-5, 1e-5)) << name;
    EXPECT_TRUE(tensors_near(norm.bias.grad(), c.output("grad_bias"), 1e-5, 1e-5)) << name;
  }
}

TEST(LayerNormGrad, Gradcheck) {
  EXPECT_GRADCHECK([](const auto& in) { return layer_norm(in[0], {5}, in[1], in[2]); },
                   {random_leaf({2, 3, 5}), random_leaf({5}, 1), random_leaf({5}, 2)});
  EXPECT_GRADCHECK(
      [](const auto& in) {
        return layer_norm(in[0], {3, 2}, Tensor(), Tensor());
      },
      {random_leaf({4, 3, 2}, 3)});
  // A non-contiguous input (normalising over what was dim 0).
  EXPECT_GRADCHECK([](const auto& in) { return layer_norm(in[0].t(), {4}, in[1], Tensor()); },
                   {random_leaf({4, 3}, 4), random_leaf({4}, 5)});
}

TEST(LayerNormForward, EachRowHasMeanZeroAndVarianceOne) {
  LayerNorm norm({8});  // weight 1, bias 0 at init
  Tensor x = random_leaf({4, 8}, 7, 5.0).detach().to(kFloat32) + 3.0;
  Tensor y = norm(x);
  EXPECT_TRUE(tensors_near(y.mean({1}), zeros({4}), 1e-5));
  // The biased variance (÷ n) is what gets normalised: it comes out as var / (var + eps) ≈ 1.
  EXPECT_TRUE(tensors_near(y.var({1}, /*correction=*/0), ones({4}), 1e-4));
}

TEST(LayerNormModule, InitPrintingAndErrors) {
  LayerNorm norm({6});
  EXPECT_TRUE(tensors_near(norm.weight, ones({6}), 0, 0));
  EXPECT_TRUE(tensors_near(norm.bias, zeros({6}), 0, 0));
  EXPECT_EQ(norm.str(), "LayerNorm([6], eps=1e-05, elementwise_affine=true)");
  LayerNorm plain({6}, 1e-6, /*elementwise_affine=*/false);
  EXPECT_TRUE(plain.parameters().empty());
  EXPECT_EQ(plain.str(), "LayerNorm([6], eps=1e-06, elementwise_affine=false)");
  EXPECT_SG_ERROR(norm(zeros({2, 5})),
                  "layer_norm: input of shape [2, 5] does not end with normalized_shape [6]");
  EXPECT_SG_ERROR(LayerNorm(Shape{}), "LayerNorm: normalized_shape must not be empty");
}

// The module runs the fused op; the golden test above checks it against torch. Here the fused op
// and the composed function (the textbook version) must agree on values and on every gradient.
TEST(LayerNormFused, MatchesTheComposedVersion) {
  struct Case {
    Shape x_shape, normalized;
    bool affine;
  };
  for (const Case& c : {Case{{4, 7, 32}, {32}, true}, Case{{3, 5, 4}, {5, 4}, true},
                        Case{{6, 33}, {33}, false}, Case{{2, 512}, {512}, true}}) {
    Tensor x = (randn(c.x_shape) * 3.0 + 1.5).requires_grad_();
    Tensor w = c.affine ? randn(c.normalized).requires_grad_() : Tensor();
    Tensor b = c.affine ? randn(c.normalized).requires_grad_() : Tensor();
    Tensor g = randn(c.x_shape);
    Tensor y = sg::fused_layer_norm(x, c.normalized, w, b, 1e-5);
    (y * g).sum().backward();
    const Tensor dx = x.grad(), dw = c.affine ? w.grad() : Tensor(),
                 db = c.affine ? b.grad() : Tensor();
    x.set_grad(Tensor());
    if (c.affine) w.set_grad(Tensor()), b.set_grad(Tensor());
    Tensor yc = layer_norm(x, c.normalized, w, b, 1e-5);
    (yc * g).sum().backward();
    EXPECT_TRUE(tensors_near(y, yc, 1e-5, 1e-5)) << fmt::format("{}", c.x_shape);
    EXPECT_TRUE(tensors_near(dx, x.grad(), 1e-5, 1e-4)) << fmt::format("{}", c.x_shape);
    if (c.affine) {
      EXPECT_TRUE(tensors_near(dw, w.grad(), 1e-4, 1e-4)) << fmt::format("{}", c.x_shape);
      EXPECT_TRUE(tensors_near(db, b.grad(), 1e-4, 1e-4)) << fmt::format("{}", c.x_shape);
    }
  }
}

TEST(LayerNormFused, GradcheckIncludingViewsAndMissingAffine) {
  EXPECT_GRADCHECK(
      [](const auto& in) { return sg::fused_layer_norm(in[0], {5}, in[1], in[2], 1e-5); },
      {random_leaf({2, 3, 5}), random_leaf({5}, 1), random_leaf({5}, 2)});
  EXPECT_GRADCHECK([](const auto& in) { return sg::fused_layer_norm(in[0].t(), {4}, in[1]); },
                   {random_leaf({4, 3}, 3), random_leaf({4}, 4)});
  EXPECT_GRADCHECK(
      [](const auto& in) {
        return sg::fused_layer_norm(in[0], {3, 2});
      },
      {random_leaf({4, 3, 2}, 5)});
  // Only the weight requires grad (a frozen input): the input's gradient is not computed.
  Tensor x = random_leaf({3, 4}, 6).detach();
  EXPECT_GRADCHECK([&](const auto& in) { return sg::fused_layer_norm(x, {4}, in[0], in[1]); },
                   {random_leaf({4}, 7), random_leaf({4}, 8)});
}

TEST(LayerNormFused, Errors) {
  EXPECT_SG_ERROR(sg::fused_layer_norm(zeros({2, 5}), {6}),
                  "layer_norm: input of shape [2, 5] does not end with normalized_shape [6]");
  EXPECT_SG_ERROR(sg::fused_layer_norm(zeros({2, 5}, kInt64), {5}),
                  "layer_norm: expected a floating point input, got int64");
  EXPECT_SG_ERROR(sg::fused_layer_norm(zeros({2, 5}), {5}, ones({4})),
                  "layer_norm: weight and bias must be float32 of shape [5], got float32 of shape "
                  "[4]");
  EXPECT_SG_ERROR(sg::fused_layer_norm(zeros({2, 5}), {5}, ones({5}), ones({5}, kFloat64)),
                  "layer_norm: weight and bias must be float32 of shape [5], got float64");
}

}  // namespace
}  // namespace sg::nn
