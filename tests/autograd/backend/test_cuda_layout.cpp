// Tests for the host-side pieces of autograd/backend/cuda/ that need no GPU, so they run on every
// machine: StridedLayout (strided_layout.h: the element offsets every CUDA elementwise and
// reduction kernel computes) and the caching allocator's size buckets (allocator.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "autograd/backend/cuda/allocator.h"
#include "autograd/backend/cuda/strided_layout.h"
#include "autograd/generator.h"
#include "tests/support/testing.h"

namespace sg::cuda {
namespace {

// Offsets of every element of `shape` (row-major) in one operand, the slow obvious way.
std::vector<int64_t> naive_offsets(const Shape& shape, const Strides& strides) {
  std::vector<int64_t> out;
  const int64_t n = numel_of(shape);
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t rest = linear, offset = 0;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      offset += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    out.push_back(offset);
  }
  return out;
}

template <int N>
void expect_layout_matches(const Shape& shape, const std::array<Strides, N>& strides) {
  std::array<const Strides*, N> pointers;
  for (int k = 0; k < N; ++k) pointers[k] = &strides[k];
  StridedLayout<N> layout = make_layout<N>("test", shape, pointers);
  for (int k = 0; k < N; ++k) {
    std::vector<int64_t> expected = naive_offsets(shape, strides[k]);
    for (int64_t i = 0; i < static_cast<int64_t>(expected.size()); ++i) {
      int64_t at[N];
      layout.offsets(i, at);
      ASSERT_EQ(at[k], expected[i])
          << fmt::format("shape {} operand {} strides {} element {}", shape, k, strides[k], i);
    }
  }
}

TEST(CudaLayout, ContiguousTensorsMergeIntoOneDim) {
  Shape shape{2, 3, 4};
  Strides strides = contiguous_strides(shape);
  StridedLayout<2> layout = make_layout<2>("test", shape, {&strides, &strides});
  EXPECT_EQ(layout.ndim, 1);
  EXPECT_EQ(layout.sizes[0], 24);
  EXPECT_TRUE(layout.contiguous());
  EXPECT_TRUE(layout.index32);
}

TEST(CudaLayout, BroadcastRowKeepsTwoDims) {
  // out [5, 4] contiguous, bias [4] broadcast over rows (stride 0).
  Shape shape{5, 4};
  Strides out{4, 1}, bias{0, 1};
  StridedLayout<2> layout = make_layout<2>("test", shape, {&out, &bias});
  EXPECT_EQ(layout.ndim, 2);
  EXPECT_FALSE(layout.contiguous());
  expect_layout_matches<2>(shape, {out, bias});
}

TEST(CudaLayout, OneElementAndSizeOneDims) {
  Shape scalar{};
  Strides none{};
  StridedLayout<1> layout = make_layout<1>("test", scalar, {&none});
  EXPECT_EQ(layout.ndim, 1);
  int64_t at[1];
  layout.offsets(0, at);
  EXPECT_EQ(at[0], 0);
  expect_layout_matches<2>({1, 5, 1, 3}, {Strides{99, 3, 7, 1}, Strides{0, 1, 0, 5}});
}

TEST(CudaLayout, RandomShapesStridesAndBroadcasts) {
  // Random shapes of up to 6 dims; each operand contiguous, permuted, sliced or broadcast.
  Generator gen(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int nd = static_cast<int>(gen.next_u64() % 7);
    Shape shape;
    for (int d = 0; d < nd; ++d) shape.push_back(1 + static_cast<int64_t>(gen.next_u64() % 4));
    std::array<Strides, 3> strides;
    for (auto& s : strides) {
      s = contiguous_strides(shape);
      switch (gen.next_u64() % 4) {
        case 0:
          break;  // contiguous
        case 1:   // reversed dims (a permutation's strides)
          std::reverse(s.begin(), s.end());
          break;
        case 2:  // every other element of a twice-as-large tensor
          for (auto& v : s) v *= 2;
          break;
        default:  // broadcast along a random dim
          if (nd > 0) s[gen.next_u64() % nd] = 0;
      }
    }
    expect_layout_matches<3>(shape, strides);
  }
}

TEST(CudaLayout, MoreThanEightUnmergeableDimsAreAClearError) {
  Shape shape(9, 2);
  Strides strides(9);
  for (int d = 0; d < 9; ++d) strides[d] = int64_t{1} << (2 * d);  // never back to back
  EXPECT_SG_ERROR((make_layout<1>("exp", shape, {&strides})),
                  "exp: the CUDA kernels handle at most 8 dims");
}

TEST(CudaLayout, HugeTensorsUse64BitIndices) {
  Shape shape{70000, 70000};
  Strides strides{1, 70000};  // transposed: two dims
  StridedLayout<1> layout = make_layout<1>("test", shape, {&strides});
  EXPECT_FALSE(layout.index32);
  int64_t at[1];
  const int64_t last = 70000LL * 70000 - 1;
  layout.offsets(last, at);
  EXPECT_EQ(at[0], 69999LL * 1 + 69999LL * 70000);
}

TEST(CudaAllocatorBuckets, SmallSizesRoundToPowersOfTwoLargeToTwoMebibytes) {
  EXPECT_EQ(CachingAllocator::bucket_size(0), 512u);
  EXPECT_EQ(CachingAllocator::bucket_size(1), 512u);
  EXPECT_EQ(CachingAllocator::bucket_size(512), 512u);
  EXPECT_EQ(CachingAllocator::bucket_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::bucket_size(4000), 4096u);
  EXPECT_EQ(CachingAllocator::bucket_size(1 << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::bucket_size((1 << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(CachingAllocator::bucket_size(5 << 20), size_t{6} << 20);
  EXPECT_EQ(CachingAllocator::bucket_size(6 << 20), size_t{6} << 20);
}

}  // namespace
}  // namespace sg::cuda
