// PyTorch habits that compile, as they do in LibTorch: the everyday expressions that once did
// not, each checked for what it means. The overloads' own tests are in ops/test_reduce.cpp
// (ReduceSingleDim) and ops/test_binary.cpp (BinaryOperators).
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::tensors_equal;
using testing::tensors_near;

TEST(TensorHabits, PyTorchExpressionsCompileAndMeanWhatTheySay) {
  Tensor x = tensor({{0.0, 1.0, -2.0}, {3.0, 0.0, 4.0}});
  Tensor y = tensor({{0.0, 2.0, -2.0}, {1.0, 0.0, 5.0}});
  EXPECT_TRUE(tensors_equal(x.sum(-1, true), tensor({{-1.0}, {7.0}})));
  EXPECT_TRUE(tensors_near(x.mean(-1, true), tensor({{-1.0 / 3}, {7.0 / 3}}), 1e-6));
  EXPECT_TRUE(tensors_equal(x.sum(-1), tensor({-1.0, 7.0})));
  EXPECT_TRUE(tensors_equal(x == 0, tensor({{1, 0, 0}, {0, 1, 0}}, kBool)));
  EXPECT_TRUE(tensors_equal(x > 0, tensor({{0, 1, 0}, {1, 0, 1}}, kBool)));
  EXPECT_TRUE(tensors_equal(x != y, tensor({{0, 1, 0}, {1, 0, 1}}, kBool)));
  EXPECT_TRUE(tensors_equal(x < y, tensor({{0, 1, 0}, {0, 0, 1}}, kBool)));
  EXPECT_TRUE(
      tensors_equal(x.masked_fill(x == 0, -1.0), tensor({{-1.0, 1.0, -2.0}, {3.0, -1.0, 4.0}})));
}

TEST(TensorHabits, TheReductionsLibTorchAcceptsWithOneDim) {
  Tensor x = arange(24, kFloat64).view({2, 3, 4});
  EXPECT_EQ(x.sum(0).shape(), (Shape{3, 4}));
  EXPECT_EQ(x.mean(1, true).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(x.var(2).shape(), (Shape{2, 3}));
  EXPECT_EQ(x.amax(-1, true).shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(x.amin(0).shape(), (Shape{3, 4}));
  EXPECT_EQ(x.max(-1).first.shape(), (Shape{2, 3}));  // these always took one dim
  EXPECT_EQ(x.argmax(1, true).shape(), (Shape{2, 1, 4}));
  EXPECT_EQ(sum(x, -1).shape(), (Shape{2, 3}));
  EXPECT_EQ(mean(x, {0, 2}, true).shape(), (Shape{1, 3, 1}));
}

}  // namespace
}  // namespace sg
