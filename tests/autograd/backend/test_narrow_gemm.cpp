// Tests for the AVX-512 narrow-product kernel (backend/cpu_fast/narrow_gemm.h): every output width
// it takes, row counts around its tile sizes, a read in rows or transposed (a weight gradient's
// gᵀ), a column block of a wider c, written or accumulated, against the float64 reference product;
// and the routes into it (matmul, fused_linear forward and backward, one thread and two).
#include "autograd/backend/cpu_fast/narrow_gemm.h"

#include <array>
#include <cmath>
#include <vector>

#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/ops.h"
#include "tests/support/reference_gemm.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

// Where the CPU (or the build) has no AVX-512, OpenBLAS does these products and there is nothing
// here to test.
#define SG_SKIP_WITHOUT_NARROW_GEMM()                                                 \
  if (!cpu::narrow_gemm_fits(8, 8, 8))                                                \
  GTEST_SKIP() << "narrow_gemm needs AVX-512 (this CPU or build has none); OpenBLAS " \
                  "does these products"

// c (+)= a·b for a [M, K] (in rows, or transposed: stored [K, M]) and b [K, N] in rows 3 floats
// wider than N; a bias [N] added to every row or none; c [M, N] inside rows of ldc = N + 2
// floats, whose extra columns must not change.
void check_product(int64_t M, int64_t N, int64_t K, bool a_transposed, bool accumulate,
                   bool with_bias = false) {
  SCOPED_TRACE(fmt::format("M {} N {} K {} a_transposed {} accumulate {} bias {}", M, N, K,
                           a_transposed, accumulate, with_bias));
  Generator gen(static_cast<uint64_t>(M * 100000 + N * 1000 + K));
  const int64_t b_rs = N + 3, ldc = N + 2;
  std::vector<float> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * b_rs)),
      c(static_cast<size_t>(M * ldc)), bias(static_cast<size_t>(N));
  for (float& v : bias) v = static_cast<float>(gen.next_normal());
  for (float& v : a) v = static_cast<float>(gen.next_normal());
  for (float& v : b) v = static_cast<float>(gen.next_normal());
  for (float& v : c) v = static_cast<float>(gen.next_normal());
  const std::vector<float> c_before = c;

  const int64_t a_rs = a_transposed ? 1 : K, a_cs = a_transposed ? M : 1;
  cpu::narrow_gemm(M, N, K, a.data(), a_rs, a_cs, b.data(), b_rs, with_bias ? bias.data() : nullptr,
                   c.data(), ldc, accumulate);

  std::vector<double> a_rows(static_cast<size_t>(M * K)), b_rows(static_cast<size_t>(K * N));
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t k = 0; k < K; ++k) a_rows[r * K + k] = a[r * a_rs + k * a_cs];
  }
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t j = 0; j < N; ++j) b_rows[k * N + j] = b[k * b_rs + j];
  }
  const std::vector<double> expected = testing::reference_gemm(a_rows, b_rows, M, K, N);
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t j = 0; j < ldc; ++j) {
      const int64_t at = r * ldc + j;
      if (j >= N) {  // outside the block
        ASSERT_EQ(c[at], c_before[at]) << "(" << r << ", " << j << ") was written";
        continue;
      }
      const double want =
          expected[r * N + j] + (accumulate ? c_before[at] : 0.0) + (with_bias ? bias[j] : 0.0);
      ASSERT_NEAR(c[at], want, 1e-5 * (1 + std::abs(want)) * std::sqrt(double(K)))
          << "(" << r << ", " << j << ")";
    }
  }
}

TEST(BackendNarrowGemm, EveryWidthItTakesMatchesTheReference) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_NARROW_GEMM();
  for (int64_t N = 1; N <= 64; ++N) {
    for (int64_t K : {1, 5, 32}) {
      ASSERT_TRUE(cpu::narrow_gemm_fits(15, N, K));
      check_product(15, N, K, false, false);
    }
  }
}

// Tiles hold 16, 14, 9 or 6 rows (1 to 4 registers a row): row counts on both sides of those
// sizes and of their multiples, and one row alone.
TEST(BackendNarrowGemm, RowCountsAroundTheTileSizes) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_NARROW_GEMM();
  for (int64_t N : {11, 32, 40, 64}) {
    for (int64_t M : {1, 2, 5, 6, 7, 8, 9, 10, 13, 14, 15, 16, 17, 27, 28, 29, 33, 100}) {
      check_product(M, N, 8, false, false);
    }
  }
}

TEST(BackendNarrowGemm, TransposedABiasAccumulationAndLongDepths) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_NARROW_GEMM();
  for (bool a_t : {false, true}) {
    for (bool accumulate : {false, true}) {
      for (bool bias : {false, true}) {
        check_product(29, 32, 32, a_t, accumulate, bias);   // a Linear layer's rows
        check_product(32, 64, 400, a_t, accumulate, bias);  // a weight gradient's rows
        check_product(7, 17, 3, a_t, accumulate, bias);
      }
    }
  }
}

TEST(BackendNarrowGemm, WiderOrDeeperProductsAreLeftToBlas) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  EXPECT_FALSE(cpu::narrow_gemm_fits(800, 65, 32));   // c's rows wider than 4 registers
  EXPECT_FALSE(cpu::narrow_gemm_fits(800, 32, 513));  // many rows and a long depth
  EXPECT_FALSE(cpu::narrow_gemm_fits(800, 0, 32));
  EXPECT_FALSE(cpu::narrow_gemm_fits(800, 32, 0));
}

// The routes in: a Linear layer's forward (Wᵀ copied into rows, the bias where the sums start)
// and backward (backend/cpu_fast/linear.cpp: dx = g·W in place, dW = gᵀ·x and db summed per block
// of rows), against the float64 reference; the weight and bias gradients, sums over every row, must
// be the same bits with 1, 2 and 4 threads (the blocks depend on the shape alone).
TEST(BackendNarrowGemm, FusedLinearForwardAndBackwardTakeIt) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_NARROW_GEMM();
  for (auto [rows, in, out] : {std::array<int64_t, 3>{800, 32, 32},
                               {800, 32, 64},
                               {37, 64, 11},
                               {100, 32, 32},
                               {1, 8, 8}}) {
    SCOPED_TRACE(fmt::format("[{}, {}] -> {}", rows, in, out));
    manual_seed(static_cast<uint64_t>(rows + in + out));
    const Tensor x = randn({rows, in}), w = randn({out, in}), b = randn({out});
    const Tensor g = randn({rows, out});
    std::vector<std::vector<Tensor>> results;  // y, dx, dw, db per thread count
    for (int threads : {1, 2, 4}) {
      const int saved = cpu::num_threads();
      cpu::set_num_threads(threads);
      Tensor xx = x.clone().requires_grad_(true), ww = w.clone().requires_grad_(true),
             bb = b.clone().requires_grad_(true);
      Tensor y = fused_linear(xx, ww, bb);
      y.backward(g);
      cpu::set_num_threads(saved);
      results.push_back({y.detach(), xx.grad(), ww.grad(), bb.grad()});
    }
    const Tensor x64 = x.to(kFloat64), w64 = w.to(kFloat64), g64 = g.to(kFloat64);
    const std::vector<Tensor>& one = results[0];
    EXPECT_TRUE(testing::tensors_near(
        one[0].to(kFloat64), testing::reference_matmul(x64, w64.t()) + b.to(kFloat64), 1e-4));
    EXPECT_TRUE(
        testing::tensors_near(one[1].to(kFloat64), testing::reference_matmul(g64, w64), 1e-4));
    EXPECT_TRUE(
        testing::tensors_near(one[2].to(kFloat64), testing::reference_matmul(g64.t(), x64), 1e-4));
    EXPECT_TRUE(testing::tensors_near(one[3].to(kFloat64), g64.sum({0}), 1e-4));
    for (size_t t = 1; t < results.size(); ++t) {
      for (size_t i = 0; i < one.size(); ++i) {
        EXPECT_TRUE(testing::tensors_equal(results[t][i], one[i])) << "result " << i;
      }
    }
  }
}

// Batched products whose b is a transposed view (attention's q·kᵀ, [B·H] products of 64-long
// sequences) take it too once there are 32 rows or more (b is copied into rows per product);
// against the float64 reference, for a few shapes on both sides of that line, with a in rows and
// transposed, and a view of heads from [B, T, H·Dh] rows.
TEST(BackendNarrowGemm, BatchedProductsWithATransposedBMatchTheReference) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_NARROW_GEMM();
  manual_seed(11);
  for (auto [M, N, K] : {std::array<int64_t, 3>{64, 64, 32},
                         {64, 32, 64},
                         {33, 17, 40},
                         {31, 64, 32},
                         {10, 10, 64}}) {
    SCOPED_TRACE(fmt::format("[{}, {}] x [{}, {}]", M, K, K, N));
    const Tensor a = randn({6, M, K}), b_t = randn({6, N, K});  // b = b_tᵀ, a transposed view
    EXPECT_TRUE(testing::tensors_near(
        matmul(a, b_t.transpose(1, 2)).to(kFloat64),
        testing::reference_matmul(a.to(kFloat64), b_t.to(kFloat64).transpose(1, 2)), 1e-4));
    const Tensor a_t = randn({6, K, M});  // both transposed
    EXPECT_TRUE(testing::tensors_near(matmul(a_t.transpose(1, 2), b_t.transpose(1, 2)).to(kFloat64),
                                      testing::reference_matmul(a_t.to(kFloat64).transpose(1, 2),
                                                                b_t.to(kFloat64).transpose(1, 2)),
                                      1e-4));
  }
  // Heads split from rows: q, k [2, 64, 4·32] viewed as [2, 4, 64, 32]; scores = q·kᵀ.
  const Tensor q = randn({2, 64, 4, 32}).transpose(1, 2), k = randn({2, 64, 4, 32}).transpose(1, 2);
  EXPECT_TRUE(testing::tensors_near(
      matmul(q, k.transpose(-2, -1)).to(kFloat64),
      testing::reference_matmul(q.to(kFloat64), k.to(kFloat64).transpose(-2, -1)), 1e-4));
}

}  // namespace
}  // namespace sg
