// Tests for the fast CPU backend's machinery that ops do not show: the caching allocator
// (backend/cpu_fast/caching_allocator.cpp), the strided loop on tensors with more dims than it
// merges on the stack (backend/cpu/strided_loop.h), and the kernels' special paths (reductions
// over columns, small and packed matrix products, short softmax rows) against the plain ops. Each
// test runs on the fast backend whatever SCRATCHGRAD_KERNELS says.
#include "autograd/backend/cpu_fast/caching_allocator.h"

#include "autograd/backend/backend.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::tensors_near;

TEST(BackendCpuAllocator, ReusesAFreedBlockOfTheSameOrASomewhatLargerSize) {
  CpuKernelsGuard fast(CpuKernels::Fast);
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
  CpuKernelsGuard fast(CpuKernels::Fast);
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
  // The 1 MiB block came from a larger segment, whose rest was cached already; now all is.
  EXPECT_GT(after.cached_bytes, 1u << 20);
  cpu::release_cached_memory();
  EXPECT_EQ(cpu::memory_stats().cached_bytes, 0u);
}

constexpr size_t kMiB = size_t{1} << 20;

TEST(BackendCpuAllocator, SplitsAFreedLargeBlockAndMergesItsPiecesBack) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  Backend& cpu = cpu_backend(CpuKernels::Fast);
  cpu::release_cached_memory();
  const cpu::MemoryStats before = cpu::memory_stats();
  char* a = static_cast<char*>(cpu.allocate(8 * kMiB));
  const size_t segment = cpu::memory_stats().cached_bytes - before.cached_bytes + 8 * kMiB;
  cpu.deallocate(a, 8 * kMiB);
  EXPECT_EQ(cpu::memory_stats().cached_bytes, before.cached_bytes + segment);

  // Two smaller requests: both carved out of the freed block, one after the other.
  char* b = static_cast<char*>(cpu.allocate(3 * kMiB));
  char* c = static_cast<char*>(cpu.allocate(3 * kMiB));
  EXPECT_EQ(b, a);
  EXPECT_EQ(c, a + 3 * kMiB);
  cpu::MemoryStats during = cpu::memory_stats();
  EXPECT_EQ(during.live_bytes, before.live_bytes + 6 * kMiB);
  EXPECT_EQ(during.cached_bytes, before.cached_bytes + segment - 6 * kMiB);

  // Freed, the pieces merge with each other and with the rest: the 8 MiB fits at a again.
  cpu.deallocate(b, 3 * kMiB);
  cpu.deallocate(c, 3 * kMiB);
  EXPECT_EQ(cpu::memory_stats().live_bytes, before.live_bytes);
  EXPECT_EQ(cpu::memory_stats().cached_bytes, before.cached_bytes + segment);
  void* again = cpu.allocate(8 * kMiB);
  EXPECT_EQ(again, a);
  // While part of the segment is in use, releasing the cache keeps all of it.
  cpu::release_cached_memory();
  EXPECT_EQ(cpu::memory_stats().cached_bytes, before.cached_bytes + segment - 8 * kMiB);
  cpu.deallocate(again, 8 * kMiB);
  cpu::release_cached_memory();
  EXPECT_EQ(cpu::memory_stats().cached_bytes, before.cached_bytes);
  EXPECT_EQ(cpu::memory_stats().live_bytes, before.live_bytes);
}

TEST(BackendCpuAllocator, RandomAllocationsStayDisjointAlignedAndIntact) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  Backend& cpu = cpu_backend(CpuKernels::Fast);
  cpu::release_cached_memory();
  const cpu::MemoryStats before = cpu::memory_stats();
  struct Live {
    size_t size;
    uint64_t pattern;
  };
  std::map<char*, Live> live;  // by address, to check neighbours for overlap
  auto fill = [](char* p, size_t size, uint64_t pattern) {
    for (size_t i = 0; i + 8 <= size; i += 8) std::memcpy(p + i, &pattern, 8);
  };
  auto intact = [](const char* p, size_t size, uint64_t pattern) {
    for (size_t i = 0; i + 8 <= size; i += 8) {
      uint64_t v;
      std::memcpy(&v, p + i, 8);
      if (v != pattern) return false;
    }
    return true;
  };
  auto free_one = [&](std::map<char*, Live>::iterator it) {
    EXPECT_TRUE(intact(it->first, it->second.size, it->second.pattern));
    cpu.deallocate(it->first, it->second.size);
    live.erase(it);
  };
  std::mt19937_64 rng(7);
  for (int step = 0; step < 2000; ++step) {
    if (live.size() < 40 && (live.empty() || rng() % 100 < 55)) {
      // Mostly large sizes (the split pool), some small ones, some not multiples of 64.
      const size_t size = rng() % 4 == 0 ? 1 + rng() % (kMiB - 1) : kMiB + rng() % (5 * kMiB);
      char* p = static_cast<char*>(cpu.allocate(size));
      ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
      auto next = live.lower_bound(p);
      if (next != live.end()) {
        ASSERT_LE(p + size, next->first);
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second.size, p);
      }
      const uint64_t pattern = rng();
      fill(p, size, pattern);
      live.emplace(p, Live{size, pattern});
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      free_one(it);
    }
    const cpu::MemoryStats now = cpu::memory_stats();
    size_t requested = 0;
    for (const auto& [p, block] : live) requested += block.size;
    ASSERT_GE(now.live_bytes, before.live_bytes + requested);
    ASSERT_LE(now.peak_live_bytes, before.peak_live_bytes + 40 * 7 * kMiB);
  }
  while (!live.empty()) free_one(live.begin());
  EXPECT_EQ(cpu::memory_stats().live_bytes, before.live_bytes);
  cpu::release_cached_memory();  // every segment is free again: all go back
  EXPECT_EQ(cpu::memory_stats().cached_bytes, before.cached_bytes);
}

TEST(BackendCpuAllocator, BlocksFreedOnOtherThreads) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  Backend& cpu = cpu_backend(CpuKernels::Fast);
  const cpu::MemoryStats before = cpu::memory_stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cpu, t] {
      for (int i = 0; i < 500; ++i) {
        const size_t size = (i % 3 == 0 ? 1000 : 2 * kMiB) + static_cast<size_t>(t) * 64;
        char* p = static_cast<char*>(cpu.allocate(size));
        std::memset(p, t, size);
        ASSERT_EQ(p[size - 1], static_cast<char>(t));
        cpu.deallocate(p, size);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(cpu::memory_stats().live_bytes, before.live_bytes);
}

TEST(BackendCpuKernels, TensorsWithMoreDimsThanTheLoopMergesOnTheStack) {
  CpuKernelsGuard fast(CpuKernels::Fast);
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

TEST(BackendCpuKernels, CopiesOfShortRowsPutEveryElementInItsPlace) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  // Merging attention heads, [B, H, T, Dh] -> [B, T, H, Dh]: rows of Dh contiguous elements, each
  // with its own start. The row lengths with a fixed-size copy (4 ... 64) and others around them,
  // in three dtypes; element (b, t, h, r) of the copy must be element (b, h, t, r) of x.
  for (DType dtype : {kFloat32, kFloat64, kInt64}) {
    for (int64_t row : {3, 4, 5, 8, 16, 31, 32, 64, 65}) {
      const int64_t B = 3, H = 4, T = 5;
      Tensor x = arange(static_cast<double>(B * H * T * row), dtype).view({B, H, T, row});
      Tensor merged = x.transpose(1, 2).contiguous();
      ASSERT_TRUE(merged.is_contiguous());
      const std::vector<double> got = merged.to(kFloat64).to_vector<double>();
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t h = 0; h < H; ++h) {
            for (int64_t r = 0; r < row; ++r) {
              const auto at = static_cast<size_t>(((b * T + t) * H + h) * row + r);
              ASSERT_EQ(got[at], static_cast<double>(((b * H + h) * T + t) * row + r))
                  << dtype_name(dtype) << " row " << row;
            }
          }
        }
      }
    }
  }
}

TEST(BackendCpuKernels, ColumnAndRowSumsMatchASumInDouble) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  Tensor x = randn({300, 7, 13});
  Tensor x64 = x.to(kFloat64);
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{0}, {0, 1}, {2}, {1}, {0, 2}, {1, 2}}) {
    EXPECT_TRUE(tensors_near(x.sum(dims), x64.sum(dims).to(kFloat32), 1e-5, 1e-5));
  }
  // A transposed view: its "columns" are strided rows.
  EXPECT_TRUE(tensors_near(x.transpose(0, 2).sum({2}), x64.sum({0}).t().to(kFloat32), 1e-5));
  // Column sums take rows four at a time: row counts that leave 1, 2 and 3 over, and fewer than 4.
  // The reference is summed here, by hand (float64 sums run the same kernel).
  for (int64_t rows : {1, 2, 3, 5, 6, 7, 803}) {
    Tensor bias_grad = randn({rows, 32});
    const std::vector<float> values = bias_grad.to_vector<float>();
    std::vector<double> want(32, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < 32; ++c) want[c] += values[r * 32 + c];
    }
    const std::vector<float> got = bias_grad.sum({0}).to_vector<float>();
    for (int64_t c = 0; c < 32; ++c) EXPECT_NEAR(got[c], want[c], 1e-5 * (1 + std::abs(want[c])));
  }
}

TEST(BackendCpuKernels, SmallAndPackedProductsMatchDoublePrecision) {
  CpuKernelsGuard fast(CpuKernels::Fast);
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
  CpuKernelsGuard fast(CpuKernels::Fast);
  for (int64_t D : {1, 3, 10, 31, 32, 100}) {
    Tensor x = randn({37, D}) * 4.0;
    EXPECT_TRUE(tensors_near(softmax(x, 1), softmax(x.to(kFloat64), 1).to(kFloat32), 1e-6, 1e-5))
        << D;
    EXPECT_TRUE(
        tensors_near(log_softmax(x, 1), log_softmax(x.to(kFloat64), 1).to(kFloat32), 1e-5, 1e-5))
        << D;
  }
}

TEST(BackendCpuKernels, ShortSoftmaxRowsMatchDoublePrecisionForEveryMaskLayout) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  // Rows of up to 64 floats take the AVX-512 kernels where the CPU has them (short_softmax.h), the
  // portable loops elsewhere; float64 always takes the portable loops, so it is the reference.
  // Masks laid out every way attention makes them: one byte per entry, a transposed view (stride
  // != 1 along the row), one byte per row (broadcast along it), one row for all rows. Backward:
  // the gradient of sum(softmax(x) * c) for a random c.
  std::vector<int64_t> lengths;
  for (int64_t D = 1; D <= 17; ++D) lengths.push_back(D);
  for (int64_t D : {31, 32, 33, 47, 48, 49, 63, 64, 65}) lengths.push_back(D);
  for (int64_t D : lengths) {
    Tensor x = randn({6, 5, D}) * 4.0;
    Tensor x64 = x.to(kFloat64);
    EXPECT_TRUE(tensors_near(softmax(x, -1), softmax(x64, -1).to(kFloat32), 1e-6, 1e-5)) << D;
    const std::vector<Tensor> masks = {rand({6, 5, D}).gt(0.3),
                                       rand({6, D, 5}).gt(0.3).transpose(1, 2),
                                       rand({6, 5, 1}).gt(0.5), rand({D}).gt(0.3)};
    for (size_t k = 0; k < masks.size(); ++k) {
      Tensor want = masked_softmax(x64, masks[k], -1).to(kFloat32);
      EXPECT_TRUE(tensors_near(masked_softmax(x, masks[k], -1), want, 1e-6, 1e-5))
          << "D " << D << " mask layout " << k;
    }
    Tensor c = randn({6, 5, D});
    Tensor leaf = x.detach().requires_grad_(true), leaf64 = x64.detach().requires_grad_(true);
    (softmax(leaf, -1) * c).sum().backward();
    (softmax(leaf64, -1) * c.to(kFloat64)).sum().backward();
    EXPECT_TRUE(tensors_near(leaf.grad(), leaf64.grad().to(kFloat32), 1e-6, 1e-5)) << D;
  }
}

TEST(BackendCpuKernels, ShortLayerNormRowsMatchDoublePrecision) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  // Float rows of up to 64 take the AVX-512 kernels where the CPU has them (short_layer_norm.h),
  // the portable loops elsewhere; float64 always takes the portable loops: the reference. With and
  // without the affine weight and bias, and with only some of the gradients wanted. 303 rows: the
  // weight and bias gradients sum over many rows in the kernel's registers.
  std::vector<int64_t> lengths;
  for (int64_t D = 1; D <= 17; ++D) lengths.push_back(D);
  for (int64_t D : {31, 32, 33, 47, 48, 49, 63, 64, 65}) lengths.push_back(D);
  for (int64_t D : lengths) {
    // A row of two close values is ill-conditioned in float (x - mean cancels), on any path.
    const double tol = D == 2 ? 5e-3 : 1e-4;
    Tensor x = randn({3, 101, D}) * 3.0 + 1.5, g = randn({3, 101, D});
    Tensor w = randn({D}), b = randn({D});
    for (int affine = 0; affine < 2; ++affine) {
      Tensor xl = x.detach().requires_grad_(true), x64 = x.to(kFloat64).requires_grad_(true);
      Tensor wl = affine ? w.detach().requires_grad_(true) : Tensor();
      Tensor bl = affine ? b.detach().requires_grad_(true) : Tensor();
      Tensor w64 = affine ? w.to(kFloat64).requires_grad_(true) : Tensor();
      Tensor b64 = affine ? b.to(kFloat64).requires_grad_(true) : Tensor();
      Tensor y = fused_layer_norm(xl, {D}, wl, bl, 1e-5);
      Tensor y64 = fused_layer_norm(x64, {D}, w64, b64, 1e-5);
      EXPECT_TRUE(tensors_near(y, y64.to(kFloat32), tol / 10, tol / 10))
          << "D " << D << " affine " << affine;
      y.backward(g);
      y64.backward(g.to(kFloat64));
      EXPECT_TRUE(tensors_near(xl.grad(), x64.grad().to(kFloat32), tol / 10, tol)) << D;
      if (affine) {
        EXPECT_TRUE(tensors_near(wl.grad(), w64.grad().to(kFloat32), tol, tol)) << D;
        EXPECT_TRUE(tensors_near(bl.grad(), b64.grad().to(kFloat32), tol, tol)) << D;
        // Only the parameters' gradients (x is a constant): the kernel's dx == nullptr path.
        Tensor w2 = w.detach().requires_grad_(true), b2 = b.detach().requires_grad_(true);
        fused_layer_norm(x, {D}, w2, b2, 1e-5).backward(g);
        EXPECT_TRUE(tensors_near(w2.grad(), wl.grad(), 1e-6, 1e-6)) << D;
        EXPECT_TRUE(tensors_near(b2.grad(), bl.grad(), 1e-6, 1e-6)) << D;
      }
    }
  }
}

// Rows of D floats: nothing kept -> zeros; a NaN where masked -> never read; a NaN where kept ->
// the row is NaN; a NaN first in an unmasked row -> NaN (a running max that drops it gives
// [NaN, 0, 0...]); a row of -inf kept (a finite max that is not -inf makes NaN of it) -> zeros;
// scores near exp's limits -> exact 0 and 1. D = 3 and 17 are the short-row paths (AVX-512
// registers, or one vectorised exp over a block of rows), 40 and 100 the row loops.
void expect_softmax_special_values(int64_t D) {
  SCOPED_TRACE(fmt::format("D {}", D));
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x(static_cast<size_t>(6 * D), 0.0f), keep(x.size(), 1.0f);
  auto at = [D](int64_t row, int64_t d) { return static_cast<size_t>(row * D + d); };
  for (int64_t d = 0; d < D; ++d) keep[at(0, d)] = 0.0f;         // row 0: nothing kept
  x[at(1, 0)] = kNaN, keep[at(1, 0)] = 0.0f;                     // row 1: NaN masked
  x[at(2, 0)] = kNaN;                                            // row 2: NaN kept
  for (int64_t d = 0; d < D; ++d) x[at(3, d)] = -kInf;           // row 3: only -inf kept
  x[at(4, 0)] = -kInf, x[at(4, 1)] = -1000, x[at(4, 2)] = 1000;  // row 4: near the limits
  x[at(5, D / 2)] = kNaN;                                        // row 5: NaN mid-row
  const Tensor xs = from_vector<float>(x, {6, D});
  const Tensor keeps = from_vector<float>(keep, {6, D}).gt(0.5);
  const std::vector<float> y = masked_softmax(xs, keeps, -1).to_vector<float>();
  for (int64_t d = 0; d < D; ++d) {
    EXPECT_EQ(y[at(0, d)], 0.0f) << "nothing kept, d " << d;
    if (d > 0) {
      EXPECT_FLOAT_EQ(y[at(1, d)], 1.0f / float(D - 1)) << "NaN masked, d " << d;
    }
    EXPECT_TRUE(std::isnan(y[at(2, d)])) << "NaN kept, d " << d;
    EXPECT_EQ(y[at(3, d)], 0.0f) << "only -inf kept, d " << d;
    EXPECT_EQ(y[at(4, d)], d == 2 ? 1.0f : 0.0f) << "near exp's limits, d " << d;
    EXPECT_TRUE(std::isnan(y[at(5, d)])) << "NaN mid-row, d " << d;
  }
  EXPECT_EQ(y[at(1, 0)], 0.0f);
  // Unmasked: a NaN anywhere makes the row NaN, and a row of -inf has no largest entry: NaN, as
  // in PyTorch.
  const std::vector<float> z = softmax(xs.slice(0, 2, 4), -1).to_vector<float>();
  for (float v : z) EXPECT_TRUE(std::isnan(v));
  const std::vector<float> w = softmax(xs.slice(0, 5, 6), -1).to_vector<float>();
  for (float v : w) EXPECT_TRUE(std::isnan(v));
}

// On every path of the fast kernels: the AVX-512 ones and the portable ones, at every CPU
// feature level this machine has.
TEST(BackendCpuKernels, SoftmaxRowsKeepTheSpecialValuesRules) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  testing::at_every_cpu_feature_level([] {
    for (const int64_t D : {3, 17, 40, 100}) expect_softmax_special_values(D);
  });
}

// The reference kernels keep the same rules.
TEST(BackendCpuKernels, ReferenceSoftmaxRowsKeepTheSpecialValuesRules) {
  CpuKernelsGuard reference(CpuKernels::Reference);
  for (const int64_t D : {3, 17, 40, 100}) expect_softmax_special_values(D);
}

}  // namespace
}  // namespace sg
