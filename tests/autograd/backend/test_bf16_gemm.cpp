// The AVX512-BF16 product (backend/cpu_fast/bf16_gemm.h) against the exact product of the same
// rounded operands, within float32 rounding of the sum (tests/support/bfloat16_bound.h), around
// every edge of its tiles (6 rows by 64 columns; 12 by 32 for narrow products), its pairs (odd K),
// its blocks of the depth (512
// pairs) and rows (144): transposed operands, accumulation onto c, batches with a shared operand,
// special values; the same bits at 1, 2 and 3 threads; and the routes into it (matmul and
// fused_linear under autocast), at every CPU feature level (the reference where there is no
// AVX512-BF16).
#include "autograd/backend/cpu_fast/bf16_gemm.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "autograd/backend/backend.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "tests/support/bfloat16_bound.h"

namespace sg {
namespace {

using testing::bfloat16_rounded;
using testing::within_float32_summation;

#define SG_SKIP_WITHOUT_BF16_GEMM()                                                     \
  if (!cpu::bf16_gemm_available())                                                      \
  GTEST_SKIP() << "bf16_gemm needs AVX512-BF16 (this CPU, build or cap has none); the " \
                  "reference does these products (AutocastTest)"

// a [batch, M, K] (or its transpose's view), b [batch, K, N] (likewise), both random; a batch of 0
// stride where `shared_b`. Returns {a, b} as the kernel sees them.
std::pair<Tensor, Tensor> operands(int64_t batch, int64_t M, int64_t N, int64_t K,
                                   bool a_transposed, bool b_transposed, bool shared_b = false) {
  Generator gen(static_cast<uint64_t>(M * 7919 + N * 104729 + K * 13 + batch));
  Tensor a = a_transposed ? randn({batch, K, M}, gen).transpose(1, 2) : randn({batch, M, K}, gen);
  Tensor b = b_transposed ? randn({shared_b ? 1 : batch, N, K}, gen).transpose(1, 2)
                          : randn({shared_b ? 1 : batch, K, N}, gen);
  if (shared_b) b = b.expand({batch, K, N});
  return {a, b};
}

cpu::StridedMatrices matrices(const Tensor& m) {
  return {m.data_ptr<float>(), m.stride(0), m.stride(1), m.stride(2)};
}

// The kernel on one layout, checked against the exact product (and c's old values).
void check_product(int64_t batch, int64_t M, int64_t N, int64_t K, bool a_transposed,
                   bool b_transposed, bool accumulate, bool shared_b = false) {
  SCOPED_TRACE(fmt::format("batch {} M {} N {} K {} a_t {} b_t {} accumulate {} shared_b {}", batch,
                           M, N, K, a_transposed, b_transposed, accumulate, shared_b));
  const auto [a, b] = operands(batch, M, N, K, a_transposed, b_transposed, shared_b);
  Tensor c = randn({batch, M, N});
  const Tensor before = c.clone();
  cpu::bf16_gemm(batch, M, N, K, matrices(a), matrices(b), c.data_ptr<float>(), accumulate);
  EXPECT_TRUE(within_float32_summation(c, bfloat16_rounded(a), bfloat16_rounded(b),
                                       accumulate ? before : Tensor()));
}

TEST(BackendBf16Gemm, EveryEdgeOfTheTileAndThePairs) {
  SG_SKIP_WITHOUT_BF16_GEMM();
  // Each operand in rows and transposed: four ways of packing a panel.
  for (const bool a_t : {false, true}) {
    for (const bool b_t : {false, true}) {
      for (const int64_t M : {1, 5, 6, 7, 11, 12, 13}) {
        for (const int64_t N : {1, 15, 16, 17, 31, 32, 33, 63, 64, 65}) {
          for (const int64_t K : {1, 2, 3, 31, 32, 33}) check_product(1, M, N, K, a_t, b_t, false);
        }
      }
    }
  }
}

TEST(BackendBf16Gemm, EveryLayoutAndAccumulation) {
  SG_SKIP_WITHOUT_BF16_GEMM();
  for (const bool a_t : {false, true}) {
    for (const bool b_t : {false, true}) {
      for (const bool accumulate : {false, true}) {
        check_product(1, 7, 65, 33, a_t, b_t, accumulate);
        check_product(1, 13, 17, 5, a_t, b_t, accumulate);
        check_product(3, 6, 64, 2, a_t, b_t, accumulate, /*shared_b=*/true);
      }
    }
  }
  // The bound tells rounded operands from the float32 ones: the product of the unrounded operands
  // is far outside it.
  const auto [a32, b32] = operands(1, 7, 65, 33, false, false);
  Tensor c32 = empty({1, 7, 65});
  cpu::bf16_gemm(1, 7, 65, 33, matrices(a32), matrices(b32), c32.data_ptr<float>(), false);
  EXPECT_FALSE(within_float32_summation(c32, a32, b32));
  // Neither stride 1 (every other column): packed element by element.
  Generator gen(9);
  const Tensor a = randn({1, 9, 40}, gen).slice(2, 0, 40, 2), b = randn({1, 20, 34}, gen);
  const Tensor bs = b.slice(2, 0, 34, 2);
  Tensor c = empty({1, 9, 17});
  cpu::bf16_gemm(1, 9, 17, 20, matrices(a), matrices(bs), c.data_ptr<float>(), false);
  EXPECT_TRUE(within_float32_summation(c, bfloat16_rounded(a), bfloat16_rounded(bs)));
}

TEST(BackendBf16Gemm, BlocksOfTheDepthAndTheRows) {
  SG_SKIP_WITHOUT_BF16_GEMM();
  // 512 pairs of k per block (K = 1024), 144 rows per block of a.
  for (const int64_t K : {1023, 1024, 1025, 2049}) check_product(1, 20, 70, K, false, true, false);
  for (const int64_t M : {143, 144, 145, 300}) check_product(1, M, 33, 40, true, false, true);
  // a in rows of pairs across blocks of rows; a transposed, packed 48 rows (8 wide panels or 4
  // narrow ones) at a time, with groups cut short by the end of a.
  for (const int64_t M : {47, 48, 49, 97, 145, 300}) {
    check_product(1, M, 33, 40, false, false, true);
    check_product(1, M, 20, 41, true, true, false);
    check_product(1, M, 70, 33, true, false, false);
  }
  // Large enough to be cut over the pool (several blocks of rows, then of columns).
  check_product(1, 300, 130, 129, false, true, true);
  check_product(1, 20, 700, 301, false, false, false);
  check_product(5, 30, 50, 70, true, true, false);
}

TEST(BackendBf16Gemm, SpecialValuesPropagate) {
  SG_SKIP_WITHOUT_BF16_GEMM();
  Tensor a = ones({1, 3, 4}), b = ones({1, 4, 2});
  a.select(0, 0).select(0, 0).select(0, 1).fill_(std::numeric_limits<float>::quiet_NaN());
  a.select(0, 0).select(0, 1).select(0, 2).fill_(std::numeric_limits<float>::infinity());
  Tensor c = empty({1, 3, 2});
  cpu::bf16_gemm(1, 3, 2, 4, matrices(a), matrices(b), c.data_ptr<float>(), false);
  const std::vector<float> v = c.to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
  EXPECT_TRUE(std::isinf(v[2]) && v[2] > 0);
  EXPECT_EQ(v[4], 4.0f);
  // Past the largest bfloat16, an operand rounds to inf (3.4e38 does).
  Tensor big = full({1, 1, 1}, 3.4e38), one = ones({1, 1, 1});
  cpu::bf16_gemm(1, 1, 1, 1, matrices(big), matrices(one), c.data_ptr<float>(), false);
  EXPECT_TRUE(std::isinf(c.to_vector<float>()[0]));
}

// The same bits at any thread count: blocks fixed by the shape, and each sum in one order.
TEST(BackendBf16Gemm, SameBitsAtOneTwoAndThreeThreads) {
  SG_SKIP_WITHOUT_BF16_GEMM();
  const int saved = cpu::num_threads();
  struct Shape3 {
    int64_t batch, M, N, K;
  };
  for (const Shape3 s :
       {Shape3{1, 400, 512, 96}, Shape3{1, 64, 900, 100}, Shape3{24, 40, 70, 64}}) {
    // a in rows or transposed, so each operand's panels are packed both ways, by several threads.
    for (const bool a_transposed : {false, true}) {
      const auto [a, b] = operands(s.batch, s.M, s.N, s.K, a_transposed, !a_transposed);
      std::vector<Tensor> results;
      for (const int threads : {1, 2, 3}) {
        cpu::set_num_threads(threads);
        Tensor c = empty({s.batch, s.M, s.N});
        cpu::bf16_gemm(s.batch, s.M, s.N, s.K, matrices(a), matrices(b), c.data_ptr<float>(),
                       false);
        results.push_back(c);
      }
      cpu::set_num_threads(saved);
      EXPECT_TRUE(testing::tensors_near(results[1], results[0], 0, 0));
      EXPECT_TRUE(testing::tensors_near(results[2], results[0], 0, 0));
    }
  }
}

// Through the ops: matmul and fused_linear under autocast on the fast kernels agree with the exact
// product at every feature level, and with the reference kernels to twice the bound.
TEST(BackendBf16Gemm, OpsUnderAutocastAtEveryFeatureLevel) {
  manual_seed(11);
  const Tensor x = randn({4, 50, 96}), w = randn({200, 96}), bias = randn({200});
  const Tensor rx = bfloat16_rounded(x), rw = bfloat16_rounded(w);
  CpuKernelsGuard fast(CpuKernels::Fast);
  testing::at_every_cpu_feature_level([&] {
    AutocastGuard autocast(kBFloat16);
    AutocastCpuMinProductGuard every_product(0);  // 200 x 96 x 200 is below the threshold
    EXPECT_TRUE(within_float32_summation(matmul(x, w.t()), rx, rw.t()));
    EXPECT_TRUE(
        within_float32_summation(fused_linear(x, w, bias), rx, rw.t(), bias.expand({4, 50, 200})));
    EXPECT_TRUE(within_float32_summation(matmul(x.transpose(1, 2), x), rx.transpose(1, 2), rx));
  });
}

// The fast backend's rounding (16 lanes in AVX-512 registers) gives the reference's bits
// (float_to_bfloat16_bits, through a bfloat16 tensor) on random bit patterns -- every exponent,
// denormals, infinities and NaNs among them -- in rows and transposed.
TEST(BackendBf16Rounding, FastRoundingHasTheReferencesBits) {
  Generator gen(17);
  std::vector<float> values(1 << 16);
  for (float& v : values) {
    const auto bits = static_cast<uint32_t>(gen.next_u64());
    std::memcpy(&v, &bits, sizeof v);
  }
  const Tensor x = from_vector(values, {256, 256});
  auto bits_of = [](const Tensor& t) {
    const Tensor c = t.contiguous();
    std::vector<uint32_t> out(static_cast<size_t>(c.numel()));
    std::memcpy(out.data(), c.raw_data(), out.size() * sizeof(uint32_t));
    for (uint32_t& b : out) {
      if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0) b = 0x7FC00000u;  // NaN
    }
    return out;
  };
  for (const bool transposed : {false, true}) {
    const Tensor in = transposed ? x.t() : x;
    Tensor reference = empty_strided(in.shape(), in.strides());
    Tensor fast = empty_strided(in.shape(), in.strides());
    cpu_backend(CpuKernels::Reference).round_to_bfloat16(in, reference);
    testing::at_every_cpu_feature_level([&] {
      cpu_backend(CpuKernels::Fast).round_to_bfloat16(in, fast);
      EXPECT_EQ(bits_of(fast), bits_of(reference)) << "transposed " << transposed;
    });
  }
  // And the reference's own bits are bfloat16 values of the inputs: the lower halves are zero.
  for (const uint32_t b : bits_of(x.to(kBFloat16).to(kFloat32))) ASSERT_EQ(b & 0xFFFFu, 0u);
}

}  // namespace
}  // namespace sg
