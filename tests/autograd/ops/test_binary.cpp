// Elementwise binary ops: broadcasting, promotion, gradients (summed over broadcast dims), errors.
#include <type_traits>
#include <utility>

#include "tests/support/golden.h"
#include "tests/support/op_info.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::elementwise_ops;
using testing::golden;
using testing::OpInfo;
using testing::random_leaf;
using testing::tensors_equal;
using testing::tensors_near;

TEST(BinaryTest, MatchesPyTorch) {
  auto check = [](const std::string& name,
                  const std::function<Tensor(const std::vector<Tensor>&)>& fn) {
    const auto& c = golden("binary", name);
    Tensor y = fn({c.input("a"), c.input("b")});
    Tensor expected = c.output();
    EXPECT_EQ(y.dtype(), expected.dtype()) << name;
    EXPECT_TRUE(tensors_near(y, expected, 1e-6, 1e-5)) << name;
  };
  for (const OpInfo& op : elementwise_ops()) {
    if (op.golden_file == "binary") check(op.name, op.fn);
  }
  // Type promotion and the comparisons.
  using In = const std::vector<Tensor>&;
  check("add_int_float", [](In in) { return in[0] + in[1]; });
  check("div_int_int", [](In in) { return in[0] / in[1]; });
  check("add_float64_float32", [](In in) { return in[0] + in[1]; });
  check("lt", [](In in) { return lt(in[0], in[1]); });
  check("eq_int", [](In in) { return eq(in[0], in[1]); });
}

TEST(BinaryTest, GradientsMatchPyTorch) {
  std::map<std::string, std::function<Tensor(const Tensor&, const Tensor&)>> ops = {
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
  };
  for (const auto& [name, fn] : ops) {
    const auto& c = golden("binary", name + "_grad");
    Tensor a = c.input("a").requires_grad_(true);
    Tensor b = c.input("b").requires_grad_(true);
    fn(a, b).sum().backward();
    EXPECT_TRUE(tensors_near(a.grad(), c.output("grad_a"), 1e-12, 1e-12)) << name;
    EXPECT_TRUE(tensors_near(b.grad(), c.output("grad_b"), 1e-12, 1e-12)) << name;
  }
}

TEST(BinaryTest, Gradcheck) {
  for (const OpInfo& op : elementwise_ops()) {
    if (op.golden_file == "binary") {
      EXPECT_GRADCHECK(op.fn, op.sample_inputs(kFloat64, 1)) << op.name;
    }
  }
  Tensor a = random_leaf({3, 1, 4}, 1);
  Tensor b = random_leaf({5, 1}, 2);
  Tensor p = random_leaf({5, 4}, 3);
  {
    NoGradGuard no_grad;
    p.copy_(p.abs() + 0.5);  // positive: a safe divisor and base
  }
  using In = const std::vector<Tensor>&;
  EXPECT_GRADCHECK([](In in) { return sub(in[0], in[1], 2.0); }, {a, b});
  EXPECT_GRADCHECK([](In in) { return 2.0 / in[0] - 1.0 + in[0] * 3.0; }, {p});
  EXPECT_GRADCHECK([](In in) { return -in[0] / 4.0 + (1.0 - in[0]); }, {a});
  // Non-contiguous and expanded operands.
  EXPECT_GRADCHECK([](In in) { return in[0].t() * in[1].slice(0, 0, 4); },
                   {p, random_leaf({5, 5}, 4)});
  EXPECT_GRADCHECK([](In in) { return in[0].expand({5, 4}) * in[1]; }, {random_leaf({1, 4}, 5), p});
  // The same tensor on both sides: both contributions accumulate.
  EXPECT_GRADCHECK([](In in) { return in[0] * in[0]; }, {a});
}

TEST(BinaryTest, PromotionAndScalars) {
  Tensor f = tensor({1.5, 2.5});
  Tensor i = tensor({1, 2}, kInt64);
  EXPECT_EQ((i + i).dtype(), kInt64);
  EXPECT_EQ((i + f).dtype(), kFloat32);
  EXPECT_EQ((f + ones({2}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((i * 2.0).dtype(), kInt64);    // a whole-number scalar keeps int64
  EXPECT_EQ((i * 0.5).dtype(), kFloat32);  // a fraction promotes, as in PyTorch
  EXPECT_EQ((i / i).dtype(), kFloat32);    // true division
  EXPECT_EQ((f * 2.0).dtype(), kFloat32);  // a double scalar does not promote a float32 tensor
  Tensor b = i.gt(1.0);
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ((b + b).dtype(), kInt64);
  EXPECT_TRUE(tensors_equal(logical_or(b, logical_not(b)), ones({2}, kBool)));
  EXPECT_TRUE(tensors_equal(f.ge(2.0), tensor({0, 1}).to(kBool)));
  // A scalar no int64 holds (infinity, 1e19) promotes like a fraction: it was cast to int64, an
  // undefined conversion that made arange(3) < inf all false.
  Tensor r = arange(3);
  EXPECT_EQ((r < INFINITY).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(r.le(1e19).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ((r + INFINITY).dtype(), kFloat32);
  EXPECT_EQ((r + INFINITY).to_vector<float>(), (std::vector<float>{INFINITY, INFINITY, INFINITY}));
  EXPECT_EQ((r * 1e19).to_vector<float>(), (std::vector<float>{0, 1e19f, 2e19f}));
  EXPECT_TRUE(holds_int64(-0x1p63) && !holds_int64(0x1p63) && !holds_int64(NAN));
}

// ---- the comparison operators, as in PyTorch and LibTorch -------------------------------------

static_assert(std::is_same_v<decltype(std::declval<Tensor>() == 0), Tensor>);
static_assert(std::is_same_v<decltype(0 < std::declval<Tensor>()), Tensor>);
// A comparison is a bool tensor, never a C++ bool: `if (a == b)` does not compile.
static_assert(!std::is_convertible_v<Tensor, bool>);

TEST(BinaryOperators, CompareTensorsElementwiseWithBroadcasting) {
  Tensor a = tensor({{1.0, 2.0, 3.0}, {0.0, -1.0, 2.0}});
  Tensor b = tensor({2.0, 2.0, 2.0});
  auto mask = [](std::initializer_list<std::initializer_list<double>> v) {
    return tensor(v, kBool);
  };
  EXPECT_TRUE(tensors_equal(a == b, mask({{0, 1, 0}, {0, 0, 1}})));
  EXPECT_TRUE(tensors_equal(a != b, mask({{1, 0, 1}, {1, 1, 0}})));
  EXPECT_TRUE(tensors_equal(a < b, mask({{1, 0, 0}, {1, 1, 0}})));
  EXPECT_TRUE(tensors_equal(a <= b, mask({{1, 1, 0}, {1, 1, 1}})));
  EXPECT_TRUE(tensors_equal(a > b, mask({{0, 0, 1}, {0, 0, 0}})));
  EXPECT_TRUE(tensors_equal(a >= b, mask({{0, 1, 1}, {0, 0, 1}})));
  // With a scalar on either side: x == 2 and 2 == x; 2 < x is x > 2.
  EXPECT_TRUE(tensors_equal(a == 2, a == b));
  EXPECT_TRUE(tensors_equal(2 == a, a == b));
  EXPECT_TRUE(tensors_equal(a != 2.0, a != b));
  EXPECT_TRUE(tensors_equal(2.0 != a, a != b));
  EXPECT_TRUE(tensors_equal(a < 2, a < b));
  EXPECT_TRUE(tensors_equal(2 < a, a > b));
  EXPECT_TRUE(tensors_equal(a <= 2, a <= b));
  EXPECT_TRUE(tensors_equal(2 <= a, a >= b));
  EXPECT_TRUE(tensors_equal(a > 2, a > b));
  EXPECT_TRUE(tensors_equal(2 > a, a < b));
  EXPECT_TRUE(tensors_equal(a >= 2, a >= b));
  EXPECT_TRUE(tensors_equal(2 >= a, a <= b));
  for (const Tensor& m : {a == b, a<0, 0> a, b != a}) {
    EXPECT_EQ(m.dtype(), kBool);
    EXPECT_EQ(m.shape(), (Shape{2, 3}));
  }
}

TEST(BinaryOperators, MatchPyTorch) {
  const auto& lt_case = golden("binary", "lt");  // [3, 1, 4] < [5, 1]
  EXPECT_TRUE(tensors_equal(lt_case.input("a") < lt_case.input("b"), lt_case.output()));
  EXPECT_TRUE(tensors_equal(lt_case.input("b") > lt_case.input("a"), lt_case.output()));
  const auto& eq_case = golden("binary", "eq_int");
  EXPECT_TRUE(tensors_equal(eq_case.input("a") == eq_case.input("b"), eq_case.output()));
}

TEST(BinaryOperators, PromoteLikePyTorchAndRecordNoGradient) {
  Tensor i = tensor({0, 1, 2}, kInt64);
  EXPECT_TRUE(tensors_equal(i == 0, tensor({1, 0, 0}, kBool)));
  EXPECT_TRUE(tensors_equal(i > 0.5, tensor({0, 1, 1}, kBool)));  // 0.5 is not truncated to 0
  EXPECT_TRUE(tensors_equal(1.5 < i, tensor({0, 0, 1}, kBool)));
  Tensor f = tensor({0.0, 1.0, 2.0}, kFloat64);
  EXPECT_TRUE(tensors_equal(i == f, ones({3}, kBool)));
  Tensor x = random_leaf({2, 3});
  EXPECT_FALSE((x > 0).requires_grad());
  EXPECT_FALSE((x == x).requires_grad());
}

TEST(BinaryOperators, MaskedFillWithAComparison) {
  Tensor x = tensor({{0.0, 2.0}, {-3.0, 0.0}}, kFloat64).requires_grad_();
  Tensor y = x.masked_fill(x == 0, -1e9);
  EXPECT_TRUE(tensors_equal(y, tensor({{-1e9, 2.0}, {-3.0, -1e9}}, kFloat64)));
  y.sum().backward();
  EXPECT_TRUE(tensors_equal(x.grad(), tensor({{0.0, 1.0}, {1.0, 0.0}}, kFloat64)));
  EXPECT_TRUE(tensors_equal(where(x > 0, x, 0.0 * x), relu(x)));
}

TEST(BinaryOperators, ShapeErrorsNameTheOp) {
  EXPECT_SG_ERROR(zeros({2}) == zeros({3}), "eq: shapes [2] and [3]");
  EXPECT_SG_ERROR(zeros({2}) >= zeros({3, 3}), "ge: shapes [2] and [3, 3]");
}

TEST(BinaryTest, Errors) {
  EXPECT_SG_ERROR(zeros({2, 3}) + zeros({4}), "add: shapes [2, 3] and [4] cannot be broadcast");
  EXPECT_SG_ERROR(zeros({2}) * zeros({3, 3}), "mul: shapes [2] and [3, 3] cannot be broadcast");
  EXPECT_SG_ERROR(lt(zeros({2}), zeros({3})), "lt: shapes [2] and [3]");
  EXPECT_SG_ERROR(zeros({2}) + Tensor(), "add: an operand is an undefined tensor");
}

TEST(BroadcastTest, NonContiguousOutputsOfEveryLayout) {
  // The strided kernel against a hand-computed expectation, for transposed/sliced/expanded inputs.
  Tensor x = arange(12, kFloat64).view({3, 4});
  Tensor y = x.t().slice(0, 0, 4, 2);  // [2, 3], strides [2, 4]
  Tensor z = tensor({10, 20, 30}, kFloat64).unsqueeze(0).expand({2, 3});
  EXPECT_EQ((y + z).to_vector<double>(), (std::vector<double>{10, 24, 38, 12, 26, 40}));
}

}  // namespace
}  // namespace sg

namespace sg {
namespace {

TEST(BinaryTest, ZeroDimTensorsPromoteLikePyTorch) {
  // A 0-d tensor only raises the dtype when it is of a higher category than the tensor with dims.
  EXPECT_EQ((ones({2}) + scalar_tensor(2.0, kFloat64)).dtype(), kFloat32);
  EXPECT_EQ((arange(3) * scalar_tensor(0.5)).dtype(), kFloat32);
  EXPECT_EQ((scalar_tensor(1.0, kFloat64) + scalar_tensor(1.0)).dtype(), kFloat64);
  EXPECT_EQ((ones({2}, kFloat64) + scalar_tensor(1.0)).dtype(), kFloat64);
}

}  // namespace
}  // namespace sg
