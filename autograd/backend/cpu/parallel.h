// parallel_for: split a kernel's work over the CPU's cores.
//
//   parallel_for(rows, /*grain=*/rows_per_64k_elements, [&](int64_t lo, int64_t hi) {
//     for (int64_t r = lo; r < hi; ++r) softmax_row(r);
//   });
//
// One small pool of (cores - 1) worker threads, shared by every kernel. The calling thread works
// too: [0, n) is cut into chunks of at least `grain` that the caller and the workers take from one
// atomic counter, so a worker that is slow to wake (a busy machine, OpenBLAS's threads still
// spinning after a product) costs nothing: the caller simply takes its chunks. Idle workers sleep
// on a condition variable, never spin, so they do not fight OpenBLAS's threads for the cores.
// Work below one grain runs on the caller alone, with no synchronisation at all.
//
// set_num_threads(1) (or SCRATCHGRAD_NUM_THREADS=1 in the environment) turns it off.
#pragma once

#include <cstdint>
#include <functional>

#include "autograd/tensor.h"

namespace sg::cpu {

// Elements (of one output, roughly) below which splitting a kernel costs more than it gains:
// waking a sleeping worker takes a few microseconds, a pass over 64K floats about 10-20.
inline constexpr int64_t kParallelGrain = 1 << 16;

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Threads the pool uses (caller included); set_num_threads(1) runs every kernel serially.
int num_threads();
void set_num_threads(int threads);

// t narrowed to [lo, hi) along dim 0 without recording anything (kernels split their operands
// this way). A tensor broadcast along dim 0 (size 1 or stride 0) stays broadcast.
Tensor rows_of(const Tensor& t, int64_t lo, int64_t hi);

}  // namespace sg::cpu
