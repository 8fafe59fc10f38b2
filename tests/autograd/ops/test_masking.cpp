// Tests for autograd/ops/masking.cpp: where, masked_fill, tril, triu.
#include <cmath>

#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::golden;
using testing::random_leaf;
using testing::tensors_equal;
using testing::tensors_near;

// ---- where -------------------------------------------------------------------------------------

TEST(MaskingWhere, BroadcastsAllThreeLikePyTorch) {
  const auto& c = golden("masking", "where_broadcast");
  Tensor out = where(c.input("condition"), c.input("a"), c.input("b"));
  EXPECT_EQ(out.shape(), (Shape{3, 4}));
  EXPECT_TRUE(tensors_equal(out, c.output()));
}

TEST(MaskingWhere, PromotesDtypes) {
  const auto& c = golden("masking", "where_promotes");
  Tensor out = where(c.input("condition"), c.input("a"), c.input("b"));
  EXPECT_EQ(out.dtype(), kFloat64);
  EXPECT_TRUE(tensors_equal(out, c.output()));
  Tensor ints = where(tensor({1, 0}, kBool), tensor({1, 2}, kInt64), tensor({0.5, 0.5}));
  EXPECT_EQ(ints.dtype(), kFloat32);
  EXPECT_TRUE(tensors_equal(ints, tensor({1.0, 0.5})));
}

TEST(MaskingWhere, Gradient) {
  Tensor cond = tensor({{1, 0, 1}, {0, 0, 1}}, kBool);
  Tensor a = random_leaf({2, 3}), b = random_leaf({2, 3}, 1);
  EXPECT_GRADCHECK([cond](const auto& in) { return where(cond, in[0], in[1]); }, {a, b});
  // Broadcast operands: a [3] against cond [2, 3]; b transposed.
  Tensor a1 = random_leaf({3}, 2), bt = random_leaf({3, 2}, 3);
  EXPECT_GRADCHECK([cond](const auto& in) { return where(cond, in[0], in[1].t()); }, {a1, bt});
}

TEST(MaskingWhere, GradientGoesToTheChosenSide) {
  Tensor a = tensor({1, 2, 3}, kFloat64).requires_grad_();
  Tensor b = tensor({4, 5, 6}, kFloat64).requires_grad_();
  where(tensor({1, 0, 1}, kBool), a, b).sum().backward();
  EXPECT_TRUE(tensors_equal(a.grad(), tensor({1, 0, 1}, kFloat64)));
  EXPECT_TRUE(tensors_equal(b.grad(), tensor({0, 1, 0}, kFloat64)));
}

TEST(MaskingWhere, Errors) {
  EXPECT_SG_ERROR(where(ones({2}), ones({2}), ones({2})),
                  "where: condition must be a bool tensor, got float32");
  EXPECT_SG_ERROR(where(ones({2}, kBool), ones({3}), ones({2})),
                  "where: shapes [2] and [3] cannot be broadcast");
}

// ---- masked_fill -------------------------------------------------------------------------------

TEST(MaskingMaskedFill, MatchesPyTorch) {
  const auto& c = golden("masking", "masked_fill_broadcast");
  Tensor out = masked_fill(c.input("x"), c.input("mask"), c.param<double>("value"));
  EXPECT_EQ(out.shape(), c.input("x").shape());
  EXPECT_TRUE(tensors_equal(out, c.output()));

  const auto& d = golden("masking", "masked_fill_neg_inf");
  EXPECT_TRUE(tensors_equal(d.input("x").masked_fill(d.input("mask"), -INFINITY), d.output()));
}

TEST(MaskingMaskedFill, Gradient) {
  Tensor x = random_leaf({2, 3, 4});
  Tensor mask = tensor({{1}, {0}, {1}}, kBool);
  EXPECT_GRADCHECK([mask](const auto& in) { return masked_fill(in[0], mask, 2.0); }, {x});
  EXPECT_GRADCHECK(
      [mask](const auto& in) { return masked_fill(in[0].transpose(1, 2), mask.t(), 0.0); }, {x});
  Tensor y = random_leaf({2, 3, 4}, 1);
  masked_fill(y, mask, -1.0).sum().backward();
  EXPECT_DOUBLE_EQ(y.grad().at<double>({1, 0, 2}), 0.0);  // masked: no gradient
  EXPECT_DOUBLE_EQ(y.grad().at<double>({1, 1, 2}), 1.0);
}

TEST(MaskingMaskedFill, Errors) {
  EXPECT_SG_ERROR(masked_fill(ones({2, 3}), ones({2, 3}), 0.0),
                  "masked_fill: mask must be a bool tensor, got float32");
  // The mask broadcasts to x, never x to the mask.
  EXPECT_SG_ERROR(masked_fill(ones({3}), ones({2, 3}, kBool), 0.0),
                  "masked_fill: mask of shape [2, 3] cannot be broadcast to the input's shape [3]");
  EXPECT_SG_ERROR(masked_fill(ones({2, 3}), ones({2}, kBool), 0.0),
                  "masked_fill: shapes [2] and [2, 3] cannot be broadcast");
  EXPECT_SG_ERROR(masked_fill(ones({2}, kInt64), ones({2}, kBool), -INFINITY),
                  "masked_fill: value -inf is not representable in dtype int64");
  EXPECT_SG_ERROR(masked_fill(ones({2}, kInt64), ones({2}, kBool), 1e19),
                  "masked_fill: value 1e+19 is not representable in dtype int64");
}

// ---- tril / triu -------------------------------------------------------------------------------

TEST(MaskingTriangle, MatchesPyTorch) {
  for (const char* d : {"m1", "0", "2"}) {
    for (const char* op : {"tril", "triu"}) {
      const auto& c = golden("masking", fmt::format("{}_diagonal_{}", op, d));
      const int64_t diagonal = c.param<int64_t>("diagonal");
      Tensor x = c.input("x");
      Tensor out = std::string(op) == "tril" ? tril(x, diagonal) : triu(x, diagonal);
      EXPECT_TRUE(tensors_equal(out, c.output())) << op << " " << diagonal;
    }
  }
}

TEST(MaskingTriangle, ADiagonalPastEitherCornerKeepsAllOrNothing) {
  // INT64_MAX went through a double (2^63) into an int64 comparison: tril kept nothing.
  const int64_t far = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(ones({3, 3}).tril(far).sum().item<float>(), 9);
  EXPECT_EQ(ones({3, 3}).triu(far).sum().item<float>(), 0);
  EXPECT_EQ(ones({3, 3}).tril(-far).sum().item<float>(), 0);
  EXPECT_EQ(ones({3, 3}).triu(std::numeric_limits<int64_t>::lowest()).sum().item<float>(), 9);
  EXPECT_EQ(ones({2, 3}).tril(-2).sum().item<float>(), 0);
  EXPECT_EQ(ones({2, 3}).triu(3).sum().item<float>(), 0);
  EXPECT_EQ(ones({2, 3}).triu(2).sum().item<float>(), 1);
}

TEST(MaskingTriangle, CausalMaskFromBoolOnes) {
  Tensor causal = ones({3, 3}, kBool).tril();
  EXPECT_EQ(causal.dtype(), kBool);
  EXPECT_TRUE(tensors_equal(causal, tensor({{1, 0, 0}, {1, 1, 0}, {1, 1, 1}}, kBool)));
}

TEST(MaskingTriangle, Gradient) {
  Tensor x = random_leaf({2, 3, 4});
  EXPECT_GRADCHECK([](const auto& in) { return tril(in[0]); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return triu(in[0], 1); }, {x});
  EXPECT_GRADCHECK([](const auto& in) { return tril(in[0].transpose(1, 2), -1); }, {x});
  Tensor y = random_leaf({3, 3});
  triu(y).sum().backward();
  EXPECT_TRUE(tensors_equal(y.grad(), triu(ones({3, 3}, kFloat64))));
}

TEST(MaskingTriangle, NeedsTwoDims) {
  EXPECT_SG_ERROR(tril(ones({3})), "tril: expected a tensor with at least 2 dims, got shape [3]");
  EXPECT_SG_ERROR(triu(scalar_tensor(1.0)), "triu: expected a tensor with at least 2 dims");
}

// ---- backward against PyTorch (float64, from a random upstream gradient) ----------------------

TEST(MaskingBackward, MatchesPyTorch) {
  using In = const testing::GoldenInputs&;
  testing::expect_backward_goldens(
      "masking",
      {
          {"where_grad_broadcast",
           [](In in) { return where(in.at("condition"), in.at("input"), in.at("other")); }},
          {"masked_fill_grad_broadcast",
           [](In in) { return in.at("x").masked_fill(in.at("mask"), -1.5); }},
          {"tril_grad_diagonal_m1", [](In in) { return in.at("x").tril(-1); }},
          {"triu_grad_diagonal_1", [](In in) { return in.at("x").triu(1); }},
      });
}

}  // namespace
}  // namespace sg
