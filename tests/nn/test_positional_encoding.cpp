#include <cmath>
#include <vector>

#include "nn/positional_encoding.h"
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::golden;
using sg::testing::random_leaf;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;

TEST(PositionalEncodingTest, SinusoidalTableMatchesTheFormula) {
  for (const char* name : {"sinusoidal_d8", "sinusoidal_d6"}) {
    SCOPED_TRACE(name);
    const auto& c = golden("nn_transformer", name);
    SinusoidalPositionalEncoding pos(c.param<int64_t>("d_model"), c.param<int64_t>("max_len"));
    EXPECT_TRUE(tensors_near(pos.pe, c.output("pe"), 1e-6, 1e-5));
  }
}

TEST(PositionalEncodingTest, SinusoidalValuesByHand) {
  SinusoidalPositionalEncoding pos(4, 10);
  // Column pair (0, 1) has frequency 1; pair (2, 3) has frequency 1 / 10000^(2/4) = 0.01.
  EXPECT_NEAR(pos.pe.at<float>({3, 0}), std::sin(3.0), 1e-6);
  EXPECT_NEAR(pos.pe.at<float>({3, 1}), std::cos(3.0), 1e-6);
  EXPECT_NEAR(pos.pe.at<float>({3, 2}), std::sin(0.03), 1e-6);
  EXPECT_NEAR(pos.pe.at<float>({3, 3}), std::cos(0.03), 1e-6);
  // Odd d_model: the last column is a sine without its cosine partner.
  SinusoidalPositionalEncoding odd(5, 4);
  EXPECT_NEAR(odd.pe.at<float>({2, 4}), std::sin(2.0 / std::pow(10000.0, 4.0 / 5.0)), 1e-6);
}

TEST(PositionalEncodingTest, SinusoidalIsABufferNotAParameter) {
  SinusoidalPositionalEncoding pos(8, 16);
  EXPECT_EQ(pos.num_parameters(), 0);
  ASSERT_EQ(pos.named_buffers().size(), 1u);
  EXPECT_EQ(pos.named_buffers()[0].first, "pe");
  EXPECT_EQ(pos.pe.shape(), (Shape{16, 8}));
}

TEST(PositionalEncodingTest, AddsRowsFromStart) {
  SinusoidalPositionalEncoding pos(6, 20);
  Tensor x = randn({2, 3, 6});
  EXPECT_TRUE(tensors_near(pos(x), x + pos.pe.narrow(0, 0, 3), 1e-7));
  EXPECT_TRUE(tensors_near(pos(x, 7), x + pos.pe.narrow(0, 7, 3), 1e-7));
  // Decoding step by step with `start` gives what the whole sequence at once gives.
  Tensor whole = pos(randn({1, 5, 6}) * 0.0);
  EXPECT_TRUE(tensors_near(pos(zeros({1, 1, 6}), 4), whole.narrow(1, 4, 1), 1e-7));
}

TEST(PositionalEncodingTest, LearnedAddsItsWeightRows) {
  LearnedPositionalEncoding pos(4, 10);
  EXPECT_EQ(pos.named_parameters()[0].first, "weight");
  EXPECT_EQ(pos.weight.shape(), (Shape{10, 4}));
  Tensor x = randn({3, 5, 4});
  EXPECT_TRUE(tensors_near(pos(x, 2), x + pos.weight.narrow(0, 2, 5), 1e-7));
}

TEST(PositionalEncodingTest, GradcheckSinusoidal) {
  SinusoidalPositionalEncoding pos(4, 8);
  pos.to(kFloat64);
  EXPECT_EQ(pos.pe.dtype(), kFloat64);
  EXPECT_GRADCHECK([&](const auto& in) { return pos(in[0], 3); }, {random_leaf({2, 3, 4}, 1)});
}

TEST(PositionalEncodingTest, GradcheckLearned) {
  LearnedPositionalEncoding pos(3, 6);
  pos.to(kFloat64);
  EXPECT_GRADCHECK(
      [&](const auto& in) { return pos(in[0].transpose(0, 1), 1) * in[0].transpose(0, 1); },
      {random_leaf({4, 2, 3}, 2), pos.weight});
  // Only the rows used get gradient.
  pos.zero_grad();
  pos(zeros({2, 3, 3}, kFloat64), 1).sum().backward();
  std::vector<double> row_sums = pos.weight.grad().sum({1}).to_vector<double>();
  EXPECT_EQ(row_sums, (std::vector<double>{0, 6, 6, 6, 0, 0}));
}

TEST(PositionalEncodingTest, SequenceLongerThanMaxLenIsAnError) {
  SinusoidalPositionalEncoding pos(4, 8);
  EXPECT_SG_ERROR(pos(zeros({1, 9, 4})),
                  "SinusoidalPositionalEncoding: positions 0..8 do not fit max_len 8");
  EXPECT_SG_ERROR(pos(zeros({1, 3, 4}), 6),
                  "SinusoidalPositionalEncoding: positions 6..8 do not fit max_len 8");
  LearnedPositionalEncoding learned(4, 5);
  EXPECT_SG_ERROR(learned(zeros({2, 6, 4})),
                  "LearnedPositionalEncoding: positions 0..5 do not fit max_len 5");
  EXPECT_SG_ERROR(pos(zeros({1, 3, 5})),
                  "SinusoidalPositionalEncoding: expected input of shape [B, T, 4], got [1, 3, 5]");
  EXPECT_SG_ERROR(SinusoidalPositionalEncoding(0, 5),
                  "SinusoidalPositionalEncoding: d_model and max_len must be positive");
}

// `train --length 576460752303423489` made a table of max_len * d_model values, a product
// that wrapped around to 32, and then wrote the whole length into it.
TEST(PositionalHardening, AnOverflowingTableIsAnError) {
  EXPECT_SG_ERROR(SinusoidalPositionalEncoding(32, 576460752303423489), "[576460752303423489, 32]");
  EXPECT_SG_ERROR(LearnedPositionalEncoding(32, 576460752303423489), "[576460752303423489, 32]");
}

}  // namespace
}  // namespace sg::nn
