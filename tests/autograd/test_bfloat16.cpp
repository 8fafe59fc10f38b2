// The bfloat16 dtype (autograd/bfloat16.h, dtype.h): rounding to nearest even on hand-worked bit
// patterns and PyTorch's golden values, conversions both ways, factories, data in and out,
// printing, and the copies that support it (docs/13b-mixed-precision.md).
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

TEST(BFloat16Test, RoundsToNearestEvenOnWorkedBitPatterns) {
  struct Case {
    uint32_t float_bits;
    uint16_t expected;
    const char* why;
  };
  const Case cases[] = {
      {0x3F800000, 0x3F80, "1.0 is exact"},
      {0x40490FDB, 0x4049, "pi: lower half 0x0FDB is below one half: down to 3.140625"},
      {0x3DCCCCCD, 0x3DCD, "0.1: lower half 0xCCCD is above one half: up to 0.10009765625"},
      {0x3F808000, 0x3F80, "1 + 2^-8: a tie, the kept half even: stays 1.0"},
      {0x3F818000, 0x3F82, "1 + 3 2^-8: a tie, the kept half odd: up to the even 1 + 2^-6"},
      {0x3F808001, 0x3F81, "just above a tie: up"},
      {0x3F807FFF, 0x3F80, "just below a tie: down"},
      {0x3FFFFFFF, 0x4000, "1.99..: the carry steps the exponent: 2.0"},
      {0x7F7F7FFF, 0x7F7F, "below one half of the last step: the largest bfloat16"},
      {0x7F7FFFFF, 0x7F80, "the largest float rounds past the largest bfloat16: inf"},
      {0x7F800000, 0x7F80, "inf stays inf"},
      {0xFF800000, 0xFF80, "-inf stays -inf"},
      {0x80000000, 0x8000, "-0 stays -0"},
      {0x00000001, 0x0000, "the smallest denormal float: 0"},
      {0x00018000, 0x0002, "a denormal tie, the kept half odd: up"},
      {0xC0490FDB, 0xC049, "-pi: the sign is kept, the magnitude rounds as for pi"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    EXPECT_EQ(float_to_bfloat16_bits(from_bits(c.float_bits)), c.expected);
    EXPECT_EQ(BFloat16(from_bits(c.float_bits)).bits, c.expected);
  }
  for (const uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FFFFFFFu}) {
    // A NaN whose payload lies in the lower half would become inf if it were rounded like a number.
    EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(from_bits(nan)))))
        << std::hex << nan;
  }
  EXPECT_EQ(bfloat16_bits_to_float(0x4049), 3.140625f);
  EXPECT_EQ(static_cast<float>(BFloat16::from_bits(0xC000)), -2.0f);
}

TEST(BFloat16Test, RoundingMatchesPyTorch) {
  // torch.tensor(x, dtype=torch.float32).to(torch.bfloat16) on special and random values.
  const auto& c = testing::golden("bfloat16", "round_special");
  const Tensor x = c.input("x");
  const Tensor rounded = x.to(kBFloat16);
  EXPECT_EQ(rounded.dtype(), kBFloat16);
  EXPECT_TRUE(testing::tensors_near(rounded.to(kFloat32), c.output(), 0.0, 0.0));
  const auto& r = testing::golden("bfloat16", "round_random");
  EXPECT_TRUE(testing::tensors_near(r.input("x").to(kBFloat16).to(kFloat32), r.output(), 0, 0));
}

TEST(BFloat16Test, ConvertsToEveryDtypeAndBack) {
  const Tensor x = tensor({-2.5, -1.0, 0.0, 0.4, 1.0, 3.0, 1000.0}, kFloat64);
  const Tensor h = x.to(kBFloat16);
  EXPECT_EQ(h.dtype(), kBFloat16);
  EXPECT_EQ(h.to(kFloat64).to_vector<double>(),
            (std::vector<double>{-2.5, -1.0, 0.0, 0.400390625, 1.0, 3.0, 1000.0}));
  EXPECT_EQ(h.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{-2, -1, 0, 0, 1, 3, 1000}));
  EXPECT_EQ(h.to(kBool).to_vector<bool>(),
            (std::vector<bool>{true, true, false, true, true, true, true}));
  EXPECT_EQ(tensor({3.0, -7.0}, kInt64).to(kBFloat16).to_vector<float>(),
            (std::vector<float>{3.0f, -7.0f}));
  EXPECT_EQ(from_vector(std::vector<bool>{true, false}).to(kBFloat16).to_vector<float>(),
            (std::vector<float>{1.0f, 0.0f}));
  // A bfloat16 value is a float32 value: the round trip through float32 is exact.
  const Tensor back = h.to(kFloat32).to(kBFloat16);
  EXPECT_TRUE(testing::tensors_near(back.to(kFloat32), h.to(kFloat32), 0, 0));
  // Integers above 256 are not all bfloat16 values (8 significant bits): 257 is a tie, to 256.
  EXPECT_EQ(tensor({257.0, 259.0}).to(kBFloat16).to_vector<float>(),
            (std::vector<float>{256.0f, 260.0f}));
}

TEST(BFloat16Test, FactoriesAndDataInAndOut) {
  EXPECT_EQ(zeros({2, 2}, kBFloat16).to_vector<float>(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(ones({3}, kBFloat16).dtype(), kBFloat16);
  EXPECT_EQ(full({2}, 0.1, kBFloat16).to_vector<float>(),
            (std::vector<float>{0.10009765625f, 0.10009765625f}));
  EXPECT_EQ(arange(0, 3, 1, kBFloat16).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(eye(2, kBFloat16).to_vector<float>(), (std::vector<float>{1, 0, 0, 1}));
  EXPECT_EQ(from_vector(std::vector<float>{3.14159f}, {1}, kBFloat16).item<float>(), 3.140625f);
  const std::vector<BFloat16> raw{BFloat16(1.5f), BFloat16(-0.25f)};
  const Tensor t = from_vector(raw, {2});
  EXPECT_EQ(t.dtype(), kBFloat16);
  EXPECT_EQ(t.data_ptr<BFloat16>()[1].bits, BFloat16(-0.25f).bits);
  EXPECT_EQ(t.to_vector<BFloat16>()[0].bits, raw[0].bits);
  EXPECT_EQ(t.at<double>({1}), -0.25);
  EXPECT_EQ(empty({5}, kBFloat16).storage_offset(), 0);
  EXPECT_EQ(dtype_size(kBFloat16), 2u);
  EXPECT_EQ(zeros({3, 5}, kBFloat16).impl()->storage->nbytes(), 30u);
  // Random factories draw in double and round, like every dtype: the same seed, the same values.
  manual_seed(7);
  const Tensor r16 = randn({64}, kBFloat16);
  manual_seed(7);
  const Tensor r32 = randn({64}, kFloat32);
  EXPECT_TRUE(testing::tensors_near(r16.to(kFloat32), r32.to(kBFloat16).to(kFloat32), 0, 0));
  EXPECT_TRUE(is_floating(kBFloat16));
  EXPECT_TRUE(t.is_floating_point());
}

TEST(BFloat16Test, PromotesLikePyTorch) {
  EXPECT_EQ(promote_types(kBFloat16, kFloat32), kFloat32);
  EXPECT_EQ(promote_types(kInt64, kBFloat16), kBFloat16);
  EXPECT_EQ(promote_types(kBFloat16, kFloat64), kFloat64);
  EXPECT_EQ(promote_types(kBool, kBFloat16), kBFloat16);
  // A float32 operand makes the op a float32 one: the bfloat16 one is converted (exactly).
  const Tensor h = tensor({1.5, 2.0}).to(kBFloat16);
  const Tensor sum = h + tensor({0.25, 0.5});
  EXPECT_EQ(sum.dtype(), kFloat32);
  EXPECT_EQ(sum.to_vector<float>(), (std::vector<float>{1.75f, 2.5f}));
}

TEST(BFloat16Test, PrintsLikePyTorch) {
  EXPECT_EQ(tensor({3.14159, -1.0}).to(kBFloat16).str(),
            "tensor([ 3.1406, -1.0000], dtype=bfloat16)");
  EXPECT_EQ(fmt::format("{}", kBFloat16), "bfloat16");
  EXPECT_EQ(scalar_tensor(0.1, kBFloat16).str(), "tensor(0.1001, dtype=bfloat16)");
}

TEST(BFloat16Test, CopiesViewsAndIndexingKeepTheBits) {
  const Tensor x = arange(0, 12, 1, kFloat32).view({3, 4}) * 0.1;
  const Tensor h = x.to(kBFloat16);
  auto same = [](const Tensor& a, const Tensor& b) {
    return testing::tensors_near(a.to(kFloat32), b.to(kBFloat16).to(kFloat32), 0, 0);
  };
  EXPECT_TRUE(same(h.t().contiguous(), x.t()));
  EXPECT_TRUE(same(h.clone(), x));
  EXPECT_TRUE(same(h.slice(1, 1, 4, 2), x.slice(1, 1, 4, 2)));
  EXPECT_TRUE(same(cat({h, h.narrow(0, 0, 1)}, 0), cat({x, x.narrow(0, 0, 1)}, 0)));
  EXPECT_TRUE(same(stack({h, h}, 1), stack({x, x}, 1)));
  const Tensor index = tensor({2.0, 0.0, 2.0}, kInt64);
  EXPECT_TRUE(same(h.index_select(0, index), x.index_select(0, index)));
  const Tensor gather_index = zeros({3, 2}, kInt64) + 3;
  EXPECT_TRUE(same(h.gather(1, gather_index), x.gather(1, gather_index)));
  const Tensor mask = x > 0.5;
  EXPECT_TRUE(same(h.masked_fill(mask, -1.0), x.masked_fill(mask, -1.0)));
  EXPECT_TRUE(same(where(mask, h, zeros({}, kBFloat16)), where(mask, x, zeros({}))));
  EXPECT_TRUE(same(h.tril(), x.tril()));
  Tensor target = zeros({3, 4}, kBFloat16);
  target.copy_(x);  // converts
  EXPECT_TRUE(same(target, x));
  target.fill_(2.5).zero_();
  EXPECT_EQ(target.to_vector<float>(), std::vector<float>(12, 0.0f));
}

}  // namespace
}  // namespace sg
