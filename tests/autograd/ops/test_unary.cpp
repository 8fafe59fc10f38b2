// Elementwise unary ops: values vs PyTorch, float64 gradchecks (also on non-contiguous inputs),
// and dtype handling.
#include <cmath>
#include <limits>

#include "tests/support/golden.h"
#include "tests/support/op_info.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::elementwise_ops;
using testing::golden;
using testing::OpInfo;
using testing::random_leaf;
using testing::tensors_near;

TEST(UnaryTest, MatchesPyTorch) {
  for (const OpInfo& op : elementwise_ops()) {
    if (op.golden_file != "unary") continue;
    const auto& g = golden("unary", op.name);
    EXPECT_TRUE(tensors_near(op.fn({g.input("x")}), g.output(), 1e-6, 1e-5)) << op.name;
  }
  const auto& s = golden("unary", "sign");
  EXPECT_TRUE(tensors_near(sign(s.input("x")), s.output(), 0, 0));
  const auto& e = golden("unary", "exp_int");  // int64 input becomes float32, as in PyTorch
  Tensor y = exp(e.input("x"));
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_TRUE(tensors_near(y, e.output(), 1e-6, 1e-6));
}

TEST(UnaryTest, GradientsMatchPyTorch) {
  for (const char* name : {"gelu", "gelu_tanh", "sigmoid", "tanh"}) {
    const auto& c = golden("unary", std::string(name) + "_grad");
    Tensor x = c.input("x").requires_grad_(true);
    Tensor y = std::string(name) == "gelu"        ? gelu(x)
               : std::string(name) == "gelu_tanh" ? gelu(x, "tanh")
               : std::string(name) == "sigmoid"   ? sigmoid(x)
                                                  : tanh(x);
    y.sum().backward();
    EXPECT_TRUE(tensors_near(y, c.output("out"), 1e-12, 1e-12)) << name;
    EXPECT_TRUE(tensors_near(x.grad(), c.output("grad"), 1e-12, 1e-12)) << name;
  }
}

TEST(UnaryTest, Gradcheck) {
  for (const OpInfo& op : elementwise_ops()) {
    if (op.golden_file != "unary") continue;
    // Positive-domain ops get inputs in [0.5, inf); the others avoid the kinks of abs/relu/clamp.
    const std::vector<Tensor> x = op.sample_inputs(kFloat64, 3);
    EXPECT_GRADCHECK(op.fn, x) << op.name;
    // The same op on a transposed (non-contiguous) view.
    auto fn = op.fn;
    EXPECT_GRADCHECK([fn](const std::vector<Tensor>& in) { return fn({in[0].t()}); }, x)
        << op.name << " on a transposed view";
  }
}

TEST(UnaryTest, DtypeRules) {
  Tensor i = tensor({-2, 3}, kInt64);
  EXPECT_EQ(neg(i).dtype(), kInt64);
  EXPECT_EQ(abs(i).to_vector<int64_t>(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sqrt(abs(i)).dtype(), kFloat32);
  EXPECT_EQ(relu(i).to_vector<int64_t>(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(clamp(i, 0, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  // Bounds beyond int64's range are its own bounds: INT64_MAX as a double is 2^63, one past it,
  // and a double out of range has no int64 value (converting it is undefined behaviour).
  const std::vector<int64_t> extremes = {std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::lowest(), -5};
  Tensor e = from_vector(extremes, {3});
  EXPECT_EQ(clamp(e, -1e300, 1e300).to_vector<int64_t>(), extremes);
  EXPECT_EQ(clamp(e, std::nullopt, 9.3e18).to_vector<int64_t>(), extremes);
  EXPECT_EQ(clamp(e, -3.0, std::nullopt).to_vector<int64_t>(),
            (std::vector<int64_t>{extremes[0], -3, -3}));
  EXPECT_SG_ERROR(clamp(e, std::nan(""), 1.0), "clamp: NaN is not a parameter for int64 tensors");
  // A fractional bound promotes to float32, as PyTorch: the 0 was left below a minimum of 0.5.
  Tensor promoted = clamp(arange(4), 0.5, std::nullopt);
  EXPECT_EQ(promoted.dtype(), kFloat32);
  EXPECT_EQ(promoted.to_vector<float>(), (std::vector<float>{0.5, 1, 2, 3}));
  EXPECT_EQ(clamp(arange(4), std::nullopt, 2.5).to_vector<float>(),
            (std::vector<float>{0, 1, 2, 2.5}));
  Tensor b = tensor({0, 1}).to(kBool);
  EXPECT_SG_ERROR(neg(b), "neg: not defined for bool tensors");
  EXPECT_EQ(logical_not(b).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_SG_ERROR(gelu(tensor({1.0}), "fast"), "gelu: approximate must be \"none\" or \"tanh\"");
  EXPECT_SG_ERROR(clamp(tensor({1.0}), std::nullopt, std::nullopt),
                  "clamp: at least one of min and max");
  // min > max sets everything to max, as in PyTorch
  EXPECT_EQ(clamp(tensor({-1, 5}), 2, 1).to_vector<float>(), (std::vector<float>{1, 1}));
}

TEST(UnaryTest, ReluGradientAtTheKinkAndForNaN) {
  // PyTorch's threshold_backward: 0 where the output is <= 0 (the kink included), else g, so a
  // NaN input passes its gradient on. On a broadcast gradient (a stride-0 view) and a strided one.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor({-1.0, 0.0, 2.0, nan}).requires_grad_(true);
  Tensor y = relu(x);
  EXPECT_TRUE(std::isnan(y.to_vector<float>()[3]));  // NaN stays NaN, as in PyTorch
  y.backward(tensor({5.0, 6.0, 7.0, 8.0}));
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{0, 0, 7, 8}));
  Tensor m = tensor({-1.0, 3.0, 0.5, -2.0, 4.0, 0.0}).reshape({2, 3}).requires_grad_(true);
  relu(m).sum().backward();
  EXPECT_EQ(m.grad().to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 1, 0}));
  Tensor t = m.detach().requires_grad_(true);
  relu(t.t()).backward(tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}).reshape({3, 2}));
  EXPECT_EQ(t.grad().to_vector<float>(), (std::vector<float>{0, 3, 5, 0, 4, 0}));
}

TEST(UnaryTest, StableAtTheExtremes) {
  Tensor big = tensor({-1000, 1000});
  EXPECT_EQ(sigmoid(big).to_vector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ(tanh(big).to_vector<float>(), (std::vector<float>{-1, 1}));
  EXPECT_EQ(gelu(big).to_vector<float>(), (std::vector<float>{0, 1000}));
}

}  // namespace
}  // namespace sg
