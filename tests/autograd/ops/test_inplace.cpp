// In-place ops: results, broadcasting into self, version bumps, and refusal under autograd.
#include "tests/support/testing.h"

namespace sg {
namespace {

TEST(InplaceTest, UpdatesValuesAndVersion) {
  Tensor x = tensor({1, 2, 3});
  int64_t v = x.version();
  x.add_(tensor({1, 1, 1}), 2.0);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{3, 4, 5}));
  x.mul_(2.0).sub_(tensor({1, 1, 1}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{5, 7, 9}));
  x.div_(tensor({5, 7, 9}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 1, 1}));
  x.addcmul_(tensor({1, 2, 3}), tensor({2, 2, 2}), 0.5);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{2, 3, 4}));
  x.addcdiv_(tensor({2, 3, 4}), tensor({2, 3, 4}), -1.0);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  x.zero_();
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(x.version(), v + 7);
}

TEST(InplaceTest, BroadcastsIntoSelfAndWritesThroughViews) {
  Tensor m = zeros({2, 3});
  m.copy_(tensor({1, 2, 3}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  m.t().add_(tensor({10, 20}));  // self is a transposed view of m
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{11, 12, 13, 21, 22, 23}));
  m.copy_(m.t().contiguous().view({2, 3}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{11, 21, 12, 22, 13, 23}));
  Tensor i = zeros({2}, kInt64);
  i.copy_(tensor({1.9, -1.9}));  // converts like a C cast
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, -1}));
  EXPECT_SG_ERROR(zeros({3}).add_(zeros({2, 3})),
                  "add_: an operand of shape [2, 3] cannot be broadcast");
  EXPECT_SG_ERROR(zeros({3}, kInt64).div_(2.0), "div_: true division needs a float tensor");
}

TEST(InplaceTest, RandomFillsAreSeeded) {
  manual_seed(3);
  Tensor a = empty({100}).uniform_(-2, 2);
  manual_seed(3);
  Tensor b = empty({100}).uniform_(-2, 2);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  EXPECT_GE(a.min().item<float>(), -2.0f);
  EXPECT_LT(a.max().item<float>(), 2.0f);
  Tensor n = empty({4000}, kFloat64).normal_(3.0, 0.5);
  EXPECT_NEAR(n.mean().item<double>(), 3.0, 0.05);
  EXPECT_NEAR(std::sqrt(n.var({0}).item<double>()), 0.5, 0.05);
}

TEST(InplaceTest, RefusesATensorWhoseElementsShareMemory) {
  // Each write would land on some elements more than once (PyTorch refuses these too): an
  // expanded row took two additions, overlapping strides added 1, 2 or 3.
  Tensor row = zeros({1, 3});
  EXPECT_SG_ERROR(row.expand({2, 3}).add_(ones({2, 3})),
                  "add_: the tensor of shape [2, 3] and strides [0, 1] has elements that share "
                  "memory");
  EXPECT_SG_ERROR(row.expand({2, 3}).copy_(ones({2, 3})), "copy_: the tensor of shape [2, 3]");
  EXPECT_SG_ERROR(empty_strided({3, 3}, {1, 1}).fill_(1.0), "fill_: the tensor of shape [3, 3]");
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  // Views that nest are fine: a transpose, a column, every other row.
  Tensor m = zeros({4, 3});
  m.t().add_(1.0);
  m.select(1, 2).add_(1.0);
  m.slice(0, 0, 4, 2).add_(1.0);
  EXPECT_EQ(m.sum().item<float>(), 12 + 4 + 6);
  EXPECT_FALSE(elements_may_overlap({2, 3}, {1, 2}));  // a transposed [3, 2]
  EXPECT_TRUE(elements_may_overlap({2, 3}, {1, 1}));
  EXPECT_FALSE(elements_may_overlap({5, 0}, {0, 0}));  // no elements
}

TEST(InplaceTest, AFloatResultIsNotCutIntoAnIntegerTensor) {
  // As PyTorch's can_cast: 0.5 added to an int64 tensor was truncated away silently.
  EXPECT_SG_ERROR(zeros({2}, kInt64).add_(tensor({0.5, 0.5})),
                  "add_: the result of an int64 tensor and a float32 operand is float32, which the "
                  "int64 tensor cannot hold");
  EXPECT_SG_ERROR(zeros({2}, kInt64).add_(0.5), "add_: the result of an int64 tensor");
  EXPECT_SG_ERROR(zeros({2}, kBool).add_(ones({2}, kInt64)), "add_: the result of a bool tensor");
  Tensor i = zeros({2}, kInt64);
  i.add_(2.0);  // a whole number is an integer operand
  Tensor f = zeros({2});
  f.add_(ones({2}, kFloat64));  // float64 into float32 rounds, as every float result does
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1, 1}));
  // Uniform and normal draws are reals.
  EXPECT_SG_ERROR(zeros({5}, kInt64).normal_(), "normal_: draws real numbers, not int64 values");
  EXPECT_SG_ERROR(zeros({5}, kBool).uniform_(0, 1), "uniform_: draws real numbers, not bool");
}

TEST(InplaceTest, RefusedWhileRecording) {
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  EXPECT_SG_ERROR(w.mul_(2.0), "mul_: cannot change a tensor of shape [2] in place");
  EXPECT_SG_ERROR(zeros({2}).add_(w), "add_: cannot change a tensor of shape [2] in place");
  NoGradGuard no_grad;
  w.mul_(2.0);  // optimizers do this
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{2, 2}));
}

}  // namespace
}  // namespace sg
