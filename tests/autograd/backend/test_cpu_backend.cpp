// Tests for the CPU backend's machinery that ops do not show: the caching allocator
// (backend/cpu/cpu_backend.cpp), the strided loop on tensors with more dims than it merges on the
// stack (backend/cpu/strided_loop.h), and the kernels' special paths (reductions over columns,
// small and packed matrix products, short softmax rows) against the plain ops.
#include "autograd/backend/cpu/cpu_backend.h"

#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::tensors_near;

TEST(BackendCpuAllocator, ReusesAFreedBlockOfTheSameOrASomewhatLargerSize) {
  cpu::release_cached_memory();  // no blocks kept by earlier tests in this process
  void* first = nullptr;
  {
    Tensor t = empty({1000, 37});
    first = t.raw_data();
  }
  Tensor same = empty({1000, 37});
  EXPECT_EQ(same.raw_data(), first);  // the block just freed
  void* second = same.raw_data();
  same = Tensor();
  Tensor smaller = empty({800, 37});  // 1.25x smaller: still takes the kept block
  EXPECT_EQ(smaller.raw_data(), second);
  smaller = Tensor();
  Tensor much_smaller = empty({400, 37});  // 2.5x smaller: a block of its own
  EXPECT_NE(much_smaller.raw_data(), second);
}

TEST(BackendCpuAllocator, CountsLiveAndCachedBytesAndReleases) {
  cpu::release_cached_memory();
  const cpu::MemoryStats before = cpu::memory_stats();
  EXPECT_EQ(before.cached_bytes, 0u);
  {
    Tensor t = empty({1 << 18});  // 1 MiB
    const cpu::MemoryStats during = cpu::memory_stats();
    EXPECT_EQ(during.live_bytes, before.live_bytes + (1u << 20));
    EXPECT_GE(during.peak_live_bytes, during.live_bytes);
  }
  const cpu::MemoryStats after = cpu::memory_stats();
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_EQ(after.cached_bytes, 1u << 20);  // kept for the next tensor of that size
  cpu::release_cached_memory();
  EXPECT_EQ(cpu::memory_stats().cached_bytes, 0u);
}

TEST(BackendCpuKernels, TensorsWithMoreDimsThanTheLoopMergesOnTheStack) {
  // 10 dims of size 2, every other one permuted: no two neighbours merge, so the strided loop
  // walks the outer dims one at a time before its fixed arrays take over.
  Shape shape(10, 2);
  Tensor x = arange(1024.0, kFloat64).view(shape);
  Tensor p = x.permute({1, 0, 3, 2, 5, 4, 7, 6, 9, 8});
  Tensor copy = p.contiguous();
  double expected = 0;
  for (double v : p.to_vector<double>()) expected += v;
  EXPECT_DOUBLE_EQ(copy.sum().item<double>(), expected);
  EXPECT_DOUBLE_EQ(p.sum().item<double>(), expected);
  // Element [1, 0, 0, ...] of the permuted view is element [0, 1, 0, ...] of x: 256.
  EXPECT_DOUBLE_EQ(copy.view({1024}).at<double>({512}), 256.0);
  EXPECT_TRUE(tensors_near((p + p).contiguous(), copy * 2.0, 0, 0));
}

TEST(BackendCpuKernels, ColumnAndRowSumsMatchASumInDouble) {
  Tensor x = randn({300, 7, 13});
  Tensor x64 = x.to(kFloat64);
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{0}, {0, 1}, {2}, {1}, {0, 2}, {1, 2}}) {
    EXPECT_TRUE(tensors_near(x.sum(dims), x64.sum(dims).to(kFloat32), 1e-5, 1e-5));
  }
  // A transposed view: its "columns" are strided rows.
  EXPECT_TRUE(tensors_near(x.transpose(0, 2).sum({2}), x64.sum({0}).t().to(kFloat32), 1e-5));
}

TEST(BackendCpuKernels, SmallAndPackedProductsMatchDoublePrecision) {
  // M = 1 (a decoding step), tiny batched products with a transposed operand (packed first), and
  // both transposed.
  for (const Shape& s : {Shape{50, 1, 8, 10}, Shape{64, 10, 8, 10}, Shape{3, 12, 20, 9}}) {
    const int64_t B = s[0], M = s[1], K = s[2], N = s[3];
    Tensor a = randn({B, M, K}), bt = randn({B, N, K}), at = randn({B, K, M});
    Tensor want = matmul(a.to(kFloat64), bt.to(kFloat64).transpose(1, 2)).to(kFloat32);
    EXPECT_TRUE(tensors_near(matmul(a, bt.transpose(1, 2)), want, 1e-5, 1e-5)) << B;
    Tensor want_t = matmul(at.to(kFloat64).transpose(1, 2), bt.to(kFloat64).transpose(1, 2));
    EXPECT_TRUE(tensors_near(matmul(at.transpose(1, 2), bt.transpose(1, 2)), want_t.to(kFloat32),
                             1e-5, 1e-5))
        << B;
  }
}

TEST(BackendCpuKernels, ShortAndLongSoftmaxRowsMatchDoublePrecision) {
  for (int64_t D : {1, 3, 10, 31, 32, 100}) {
    Tensor x = randn({37, D}) * 4.0;
    EXPECT_TRUE(tensors_near(softmax(x, 1), softmax(x.to(kFloat64), 1).to(kFloat32), 1e-6, 1e-5))
        << D;
    EXPECT_TRUE(
        tensors_near(log_softmax(x, 1), log_softmax(x.to(kFloat64), 1).to(kFloat32), 1e-5, 1e-5))
        << D;
  }
}

}  // namespace
}  // namespace sg
