// A float matrix copied into its transpose's rows, scaled on the way: the operands that a
// register-tiled product wants in rows but that come transposed (attention's kᵀ and vᵀ, a Linear
// layer's Wᵀ). One element at a time such a copy costs ~2 cycles per element, as much as a
// short product that reads it; with AVX-512 it moves 16 x 16 blocks through registers.
#pragma once

#include <cstdint>

namespace sg::cpu {

// dst[c * dst_row + r] = scale * src[r * src_row + c] for r < rows, c < cols. src and dst must
// not overlap.
void transpose_into_rows(const float* src, int64_t src_row, int64_t rows, int64_t cols, float scale,
                         float* dst, int64_t dst_row);

}  // namespace sg::cpu
