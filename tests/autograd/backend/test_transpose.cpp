// Tests for transpose_into_rows (backend/cpu_fast/transpose.h): sizes on both sides of its 16 x 16
// blocks, rows of the source and of the destination wider than the matrix (whose extra entries
// must not change), and the scale, against the element-by-element definition. The products that
// use it (attention's kᵀ and vᵀ) are tested through fused_attention (tests/nn).
#include "autograd/backend/cpu_fast/transpose.h"

#include <vector>

#include "tests/support/testing.h"

namespace sg {
namespace {

void check_transpose(int64_t rows, int64_t cols, float scale) {
  SCOPED_TRACE(fmt::format("rows {} cols {} scale {}", rows, cols, scale));
  const int64_t src_row = cols + 3, dst_row = rows + 5;
  std::vector<float> src(static_cast<size_t>(rows * src_row));
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.25f - 7.0f;
  constexpr float kUntouched = -12345.0f;
  std::vector<float> dst(static_cast<size_t>(cols * dst_row), kUntouched);
  cpu::transpose_into_rows(src.data(), src_row, rows, cols, scale, dst.data(), dst_row);
  int wrong = 0;
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t r = 0; r < dst_row; ++r) {
      const float expected = r < rows ? scale * src[r * src_row + c] : kUntouched;
      if (dst[c * dst_row + r] != expected && ++wrong <= 3) {
        ADD_FAILURE() << fmt::format("dst[{}, {}] = {}, expected {}", c, r, dst[c * dst_row + r],
                                     expected);
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST(BackendTranspose, MatchesTheDefinitionAroundItsBlocks) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  for (int64_t rows : {1, 5, 15, 16, 17, 32, 40, 64}) {
    for (int64_t cols : {1, 7, 16, 17, 31, 33, 64}) check_transpose(rows, cols, 1.0f);
  }
}

TEST(BackendTranspose, ScalesOnTheWay) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  check_transpose(64, 32, 0.125f);
  check_transpose(11, 64, -3.0f);
}

}  // namespace
}  // namespace sg
