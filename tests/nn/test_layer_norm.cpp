// Tests for nn/layer_norm.cpp: values and gradients against torch.nn.LayerNorm (over one and two
// dims), gradchecks, the normalised statistics, init, printing and errors.
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

}  // namespace
}  // namespace sg::nn
