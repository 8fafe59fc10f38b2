// Gradients of gradients through modules, against torch.autograd.grad(..., create_graph=True):
// Hessian-vector products of an MLP and of a Transformer encoder layer (whose float32 forward runs
// the fused linear, layer-norm and attention kernels, so their create_graph fallbacks are what is
// checked), a gradient penalty, and gradgradcheck of the layers in float64.
#include <map>
#include <string>
#include <vector>

#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/transformer_encoder.h"
#include "tests/nn/golden_parameters.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::golden;
using sg::testing::GoldenCase;
using sg::testing::load_golden_parameters;
using sg::testing::parameter_names;
using sg::testing::random_leaf;
using sg::testing::tensors_near;

// Linear(4, h) -> tanh -> Linear(h, out), named as torch's Sequential names them ("0.", "2.").
struct Mlp {
  Linear first, second;
  Mlp(int64_t hidden, int64_t out) : first(4, hidden), second(hidden, out) {}
  Tensor operator()(const Tensor& x) { return second(tanh(first(x))); }
  std::map<std::string, Tensor> named() const {
    return {{"0.weight", first.weight},
            {"0.bias", first.bias},
            {"2.weight", second.weight},
            {"2.bias", second.bias}};
  }
  void load(const GoldenCase& c) {
    NoGradGuard no_grad;
    for (auto& [name, p] : named()) p.copy_(c.input(name));
  }
};

// Hv = d/dθ (∇_θ loss · v): one backward with create_graph, a dot product, one more backward.
std::vector<Tensor> hessian_vector_product(const Tensor& loss, const std::vector<Tensor>& params,
                                           const std::vector<Tensor>& vs) {
  std::vector<Tensor> grads =
      autograd::grad({loss}, params, {}, std::nullopt, /*create_graph=*/true);
  Tensor dot = zeros({});
  for (size_t i = 0; i < grads.size(); ++i) dot = dot + (grads[i] * vs[i]).sum();
  return autograd::grad({dot}, params, {}, std::nullopt, false, /*allow_unused=*/true);
}

TEST(NnDoubleBackwardTest, MlpHessianVectorProductMatchesPyTorch) {
  const auto& c = golden("nn_double_backward", "mlp_hvp");
  Mlp net(8, 3);
  net.load(c);
  std::vector<std::string> names = c.param<std::vector<std::string>>("parameters");
  std::vector<Tensor> params, vs;
  for (const std::string& n : names) {
    params.push_back(net.named().at(n));
    vs.push_back(c.input("v." + n));
  }
  Tensor diff = net(c.input("x")) - c.input("t");
  Tensor loss = (diff * diff).mean();
  EXPECT_TRUE(tensors_near(loss, c.output("loss"), 1e-6, 1e-5));
  std::vector<Tensor> hv = hessian_vector_product(loss, params, vs);
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_TRUE(tensors_near(hv[i], c.output("hvp." + names[i]), 1e-5, 1e-4));
  }
}

TEST(NnDoubleBackwardTest, EncoderLayerHessianVectorProductMatchesPyTorch) {
  const auto& c = golden("nn_double_backward", "encoder_layer_hvp");
  TransformerOptions o;
  o.d_model = c.param<int64_t>("d_model");
  o.heads = c.param<int64_t>("heads");
  o.d_ff = c.param<int64_t>("d_ff");
  o.dropout = 0.0;
  o.norm_first = c.param<bool>("norm_first");
  o.activation = c.param<std::string>("activation");
  EncoderLayer layer(o);
  ASSERT_EQ(parameter_names(layer), c.param<std::vector<std::string>>("parameters"));
  load_golden_parameters(layer, c);
  Tensor x = c.input("x").requires_grad_();
  std::vector<Tensor> params{x}, vs{c.input("v.x")};
  for (const auto& [name, p] : layer.named_parameters()) {
    params.push_back(p);
    vs.push_back(c.input("v." + name));
  }
  Tensor loss = (layer(x, c.input("mask")) * c.input("r")).sum();
  std::vector<Tensor> hv = hessian_vector_product(loss, params, vs);
  EXPECT_TRUE(tensors_near(hv[0], c.output("hvp.x"), 1e-4, 1e-3));
  size_t i = 1;
  for (const auto& [name, p] : layer.named_parameters()) {
    SCOPED_TRACE(name);
    Tensor h = hv[i++];
    if (!h.defined()) h = zeros_like(p);  // a gradient with no graph: zero second derivative
    EXPECT_TRUE(tensors_near(h, c.output("hvp." + name), 1e-4, 1e-3));
  }
}

TEST(NnDoubleBackwardTest, GradientPenaltyMatchesPyTorch) {
  const auto& c = golden("nn_double_backward", "gradient_penalty");
  Mlp critic(8, 1);
  critic.load(c);
  Tensor x = c.input("x").requires_grad_();
  // P = mean_i (‖∂D(x)/∂x_i‖ - 1)²: the gradient is an ordinary tensor with a graph...
  Tensor dx = autograd::grad({critic(x).sum()}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(tensors_near(dx, c.output("dx"), 1e-6, 1e-5));
  Tensor norm = (dx * dx).sum({1}).sqrt();
  Tensor penalty = ((norm - 1.0) * (norm - 1.0)).mean();
  EXPECT_TRUE(tensors_near(penalty, c.output("penalty"), 1e-6, 1e-5));
  // ...so the penalty has a gradient with respect to the critic's parameters, through ∂D/∂x.
  std::vector<std::string> names = c.param<std::vector<std::string>>("parameters");
  std::vector<Tensor> wrt;
  for (const std::string& n : names) wrt.push_back(critic.named().at(n));
  wrt.push_back(x);
  std::vector<Tensor> grads =
      autograd::grad({penalty}, wrt, {}, std::nullopt, false, /*allow_unused=*/true);
  EXPECT_FALSE(grads[3].defined());  // the last bias does not change ∂D/∂x
  for (size_t i = 0; i < names.size(); ++i) {
    SCOPED_TRACE(names[i]);
    Tensor g = grads[i].defined() ? grads[i] : zeros_like(wrt[i]);
    EXPECT_TRUE(tensors_near(g, c.output("grad." + names[i]), 1e-5, 1e-4));
  }
  EXPECT_TRUE(tensors_near(grads.back(), c.output("grad.x"), 1e-5, 1e-4));
}

// The fused float32 kernels (linear, layer norm, attention, cross-entropy) fall back to their
// composed versions under create_graph: second derivatives in float32 agree with float64 (where
// gradgradcheck checked them).
TEST(NnDoubleBackwardTest, FusedKernelsDifferentiateTwiceInFloat32) {
  auto second_derivative = [](DType dtype) {
    Tensor x = random_leaf({2, 3, 8}, 1).detach().to(dtype).requires_grad_();
    Tensor w = random_leaf({8, 8}, 2).detach().to(dtype).requires_grad_();
    Tensor b = random_leaf({8}, 3).detach().to(dtype).requires_grad_();
    Tensor gamma = random_leaf({8}, 4).detach().to(dtype).requires_grad_();
    Tensor h = fused_layer_norm(fused_linear(x, w, b), {8}, gamma, b);
    Tensor q = h.view({2, 3, 2, 4}).transpose(1, 2);
    Tensor mask = tril(ones({3, 3}, kBool));
    auto [attended, weights] = fused_attention(q, q, q, mask, 0.5);
    if (!attended.defined())
      attended = matmul(masked_softmax(matmul(q, q.transpose(-2, -1)) * 0.5, mask), q);
    Tensor logits = attended.transpose(1, 2).reshape({6, 8});
    Tensor target = zeros({6}, kInt64);
    Tensor loss = cross_entropy(logits, target);
    std::vector<Tensor> g = autograd::grad({loss}, {x, w, gamma}, {}, std::nullopt, true);
    Tensor dot = (g[0] * g[0]).sum() + (g[1] * g[1]).sum() + (g[2] * g[2]).sum();
    return autograd::grad({dot}, {x, w, gamma});
  };
  std::vector<Tensor> f32 = second_derivative(kFloat32), f64 = second_derivative(kFloat64);
  for (size_t i = 0; i < f32.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(tensors_near(f32[i].to(kFloat64), f64[i], 1e-4, 1e-3));
  }
}

TEST(NnDoubleBackwardTest, GradgradcheckEncoderLayerAndLosses) {
  TransformerOptions o;
  o.d_model = 4;
  o.heads = 2;
  o.d_ff = 8;
  o.dropout = 0.0;
  EncoderLayer layer(o);
  layer.to(kFloat64);
  Tensor mask = make_padding_mask(tensor({1, 1, 1, 1, 0, 0}).to(kInt64).view({2, 3}), 0);
  std::vector<Tensor> inputs{random_leaf({2, 3, 4}, 5)};
  for (const Tensor& p : layer.parameters()) inputs.push_back(p);
  GradcheckOptions loose;
  loose.atol = 1e-4;
  EXPECT_GRADGRADCHECK([&](const auto& in) { return layer(in[0], mask); }, inputs, loose);
  Tensor target = tensor({2, 0, 1}).to(kInt64);
  EXPECT_GRADGRADCHECK(
      [&](const auto& in) { return cross_entropy_composed(in[0], target, -100, 0.1, "mean"); },
      {random_leaf({3, 4}, 6)});
}

}  // namespace
}  // namespace sg::nn
