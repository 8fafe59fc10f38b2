// Tests for the AVX-512 tiny-product kernel (backend/cpu_fast/tiny_gemm.h): every size it takes,
// with the strides attention gives it (transposed keys, broadcast operands), written or
// accumulated, against the float64 reference product; and the routes into it (matmul,
// fused_linear).
#include "autograd/backend/cpu_fast/tiny_gemm.h"

#include <vector>

#include "autograd/ops.h"
#include "tests/support/reference_gemm.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

// Where the CPU (or the build) has no AVX-512, OpenBLAS does these products and there is nothing
// here to test.
#define SG_SKIP_WITHOUT_TINY_GEMM()                                                 \
  if (!cpu::tiny_gemm_fits(2, 2, 2))                                                \
  GTEST_SKIP() << "tiny_gemm needs AVX-512 (this CPU or build has none); OpenBLAS " \
                  "does these products"

// Element (r, c) of matrix i in a buffer laid out with the given strides.
struct Layout {
  int64_t batch_stride, row_stride, col_stride;
  int64_t at(int64_t i, int64_t r, int64_t c) const {
    return i * batch_stride + r * row_stride + c * col_stride;
  }
};

// batch products [M, K]·[K, N] with a and b laid out as asked, checked against the reference.
void check_products(int64_t batch, int64_t M, int64_t N, int64_t K, bool a_transposed,
                    bool b_transposed, bool b_broadcast, bool accumulate) {
  SCOPED_TRACE(fmt::format("batch {} M {} N {} K {} a_t {} b_t {} b_bcast {} accumulate {}", batch,
                           M, N, K, a_transposed, b_transposed, b_broadcast, accumulate));
  Generator gen(static_cast<uint64_t>(M * 10000 + N * 100 + K));
  const Layout la = a_transposed ? Layout{M * K + 3, 1, M} : Layout{M * K + 3, K, 1};
  const int64_t b_batches = b_broadcast ? 1 : batch;
  const Layout lb = {b_broadcast ? 0 : K * N + 5, b_transposed ? 1 : N, b_transposed ? K : 1};
  std::vector<float> a(static_cast<size_t>(batch * la.batch_stride)),
      b(static_cast<size_t>(b_batches * (K * N + 5)));
  for (float& v : a) v = static_cast<float>(gen.next_normal());
  for (float& v : b) v = static_cast<float>(gen.next_normal());
  std::vector<float> c(static_cast<size_t>(batch * M * N));
  for (float& v : c) v = static_cast<float>(gen.next_normal());
  const std::vector<float> c_before = c;

  cpu::tiny_gemm(batch, M, N, K, {a.data(), la.batch_stride, la.row_stride, la.col_stride},
                 {b.data(), lb.batch_stride, lb.row_stride, lb.col_stride}, c.data(), accumulate);

  for (int64_t i = 0; i < batch; ++i) {
    std::vector<double> ai(static_cast<size_t>(M * K)), bi(static_cast<size_t>(K * N));
    for (int64_t r = 0; r < M; ++r) {
      for (int64_t k = 0; k < K; ++k) ai[r * K + k] = a[la.at(i, r, k)];
    }
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < N; ++j) bi[k * N + j] = b[lb.at(i, k, j)];
    }
    const std::vector<double> expected = testing::reference_gemm(ai, bi, M, K, N);
    for (int64_t r = 0; r < M; ++r) {
      for (int64_t j = 0; j < N; ++j) {
        const int64_t at = i * M * N + r * N + j;
        const double want = expected[r * N + j] + (accumulate ? c_before[at] : 0.0);
        ASSERT_NEAR(c[at], want, 1e-5 * (1 + std::abs(want)))
            << "product " << i << " (" << r << ", " << j << ")";
      }
    }
  }
}

TEST(BackendTinyGemm, EverySizeItTakesMatchesTheReference) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_TINY_GEMM();
  for (int64_t M = 2; M <= 16; ++M) {
    for (int64_t N = 1; N <= 16; ++N) {
      for (int64_t K : {1, 3, 8, 16}) {
        ASSERT_TRUE(cpu::tiny_gemm_fits(M, N, K));
        check_products(3, M, N, K, false, false, false, false);
      }
    }
  }
}

TEST(BackendTinyGemm, TransposedAndBroadcastOperandsAndAccumulation) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_TINY_GEMM();
  for (bool a_t : {false, true}) {
    for (bool b_t : {false, true}) {
      for (bool b_bcast : {false, true}) {
        for (bool accumulate : {false, true}) {
          check_products(5, 11, 11, 8, a_t, b_t, b_bcast, accumulate);  // tiny attention
          check_products(2, 16, 7, 16, a_t, b_t, b_bcast, accumulate);
          check_products(2, 9, 16, 5, a_t, b_t, b_bcast, accumulate);
        }
      }
    }
  }
}

TEST(BackendTinyGemm, LargerProductsAreLeftToBlas) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  EXPECT_FALSE(cpu::tiny_gemm_fits(1, 8, 8));  // one row: gemm.cpp's own loop
  EXPECT_FALSE(cpu::tiny_gemm_fits(17, 8, 8));
  EXPECT_FALSE(cpu::tiny_gemm_fits(8, 17, 8));
  EXPECT_FALSE(cpu::tiny_gemm_fits(8, 8, 17));
}

// The routes in: attention's batched products with transposed keys, and a small Linear (the
// bias accumulated onto), each against the float64 reference.
TEST(BackendTinyGemm, MatmulAndFusedLinearTakeItForSmallFloatProducts) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_TINY_GEMM();
  Tensor q = randn({6, 4, 11, 8});
  Tensor k = randn({6, 4, 11, 8});
  Tensor scores = matmul(q, k.transpose(-2, -1));
  EXPECT_TRUE(testing::tensors_near(
      scores.to(kFloat64),
      testing::reference_matmul(q.to(kFloat64), k.transpose(-2, -1).to(kFloat64)), 1e-5));
  Tensor p = softmax(scores, -1);
  Tensor v = randn({6, 4, 11, 8});
  EXPECT_TRUE(testing::tensors_near(
      matmul(p, v).to(kFloat64), testing::reference_matmul(p.to(kFloat64), v.to(kFloat64)), 1e-5));

  Tensor x = randn({9, 12});
  Tensor w = randn({5, 12});
  Tensor b = randn({5});
  Tensor expected = testing::reference_matmul(x.to(kFloat64), w.t().to(kFloat64)) + b.to(kFloat64);
  EXPECT_TRUE(testing::tensors_near(fused_linear(x, w, b).to(kFloat64), expected, 1e-5));
}

}  // namespace
}  // namespace sg
