// parallel_for: split a kernel's work over the CPU's cores.
//
//   parallel_for(rows, /*grain=*/rows_per_8k_elements, [&](int64_t lo, int64_t hi) {
//     for (int64_t r = lo; r < hi; ++r) softmax_row(r);
//   });
//
// One small pool of (cores - 1) worker threads, shared by every kernel. The calling thread works
// too. [0, n) is cut into chunks of at least `grain`, and thread t (the caller is 0) owns the
// chunks of rows [n·t/T, n·(t+1)/T): the same rows in every kernel, so what a thread wrote in
// one kernel is still in its core's cache for the next. A thread that has done its own chunks
// takes the others' from their far end, so a worker that is slow to wake (a busy machine) costs
// nothing: the caller simply takes its chunks. Idle workers watch for the next job for a while
// (SCRATCHGRAD_WATCH_US) and then sleep on a condition variable; quiet_workers() sends them to
// sleep at once, before OpenBLAS's own threads want the cores.
// Work below two grains runs on the caller alone, with no synchronisation at all. fn never gets
// an empty range.
//
// set_num_threads(1) (or SCRATCHGRAD_NUM_THREADS=1 in the environment) turns it off.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "autograd/tensor.h"

namespace sg::cpu {

// Elements (of one output, roughly) below which splitting a kernel costs more than it gains: a
// job for a watching worker costs about as much as a pass over a few thousand floats (waking a
// sleeping one takes longer, but in a step of many kernels the workers are watching; the
// measurements are in bench/NOTES.md).
inline constexpr int64_t kParallelGrain = 1 << 13;
// Flops of a matrix product below which a share of it is not worth a thread (measured on
// [800, 32]·[32, 32], whose two halves take half the time of the whole when the rows around it
// are split the same way: gemm.cpp, linear.cpp; bench/NOTES.md).
inline constexpr double kMinSplitFlops = 0.4e6;

// Runs fn over [0, n) in chunks of at least `grain`, on the pool's threads and the caller's.
// Each thread gets up to `chunks_per_thread` chunks (4: enough to balance most kernels, few
// enough that each is worth its atomic and that rows stay with the thread that wrote them); a job
// of a few large units of equal cost (a product's blocks of tiles) asks for more, so that the
// last chunk, which decides when the job ends, is small.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn,
                  int64_t chunks_per_thread = 4);

// Note [Blocks fixed by the shape]: a kernel whose result combines partial results (sums over
// rows split into blocks, a product cut into BLAS calls) cuts its work into fixed_blocks(work,
// min_block) blocks and hands the blocks, not rows, to parallel_for. The count depends on the
// job's size alone, never on the thread count: a power of two (2, 4 or 16 threads share them
// evenly), one block per `min_block` units of work at least, at most kMaxBlocks. So one thread
// and sixteen compute the same blocks and add them in the same order: the same bits, whatever
// the thread count and whatever the BLAS does inside one call.
inline constexpr int64_t kMaxBlocks = 16;
int64_t fixed_blocks(double work, double min_block);

// Idle workers stop watching for the next job and sleep until one comes: called before OpenBLAS
// runs a product on its own threads, which need the cores the watchers would take.
void quiet_workers();

// Threads the pool uses (caller included); set_num_threads(1) runs every kernel serially.
int num_threads();
void set_num_threads(int threads);

// The pool's size until set_num_threads: SCRATCHGRAD_NUM_THREADS if set (empty counts as unset),
// else one thread per CPU this process may run on (its affinity mask: a container or `taskset`
// may allow fewer than the machine has). More threads than CPUs are allowed, but their workers
// then sleep between jobs instead of watching for the next one. A bad value is an error naming the
// variable. The pool reads it on first use, which the reference kernels never make: a program that
// takes the variable reads it up front, so that a typo is reported whichever kernels run.
int default_num_threads();
// The CPUs this process may run on: its affinity mask on Linux, else the hardware threads.
int available_cpus();

// The most threads set_num_threads, SCRATCHGRAD_NUM_THREADS and set_blas_threads accept. More is
// a typing mistake on any machine this library runs on, and not a harmless one: each thread
// reserves a stack, and each OpenBLAS thread a buffer, until the address space runs out.
inline constexpr int kMaxThreads = 1024;

// A thread count written as text (`source` names where it came from, e.g. the environment
// variable): the whole text one decimal number in [1, kMaxThreads], or an error naming `source`.
int parse_thread_count(std::string_view text, std::string_view source);

// t narrowed to [lo, hi) along dim 0 without recording anything (kernels split their operands
// this way). A tensor broadcast along dim 0 (size 1 or stride 0) stays broadcast.
Tensor rows_of(const Tensor& t, int64_t lo, int64_t hi);

}  // namespace sg::cpu
