// Copies whose innermost contiguous runs are short: merging attention heads ([B, H, T, Dh] read as
// [B, T, H, Dh] and copied into rows: runs of head_dim elements) and their gradients, the other
// way. The strided loop (strided_loop.h) calls its kernel once per run, and for a run of 8
// floats that bookkeeping costs more than the 32 bytes, several times memcpy's (bench_kernels,
// merge_heads_copy). Here the rows' starts are walked as the runs, and each row is copied with a
// fixed-size copy of 4, 8, 16, 32 or 64 elements.
#pragma once

#include "autograd/tensor.h"

namespace sg::cpu {

// dst = src (same shape and dtype) when the copy is of that kind; false, with nothing written,
// when it is not (the caller then takes the general loop).
bool copy_short_rows(const Tensor& src, const Tensor& dst);

}  // namespace sg::cpu
