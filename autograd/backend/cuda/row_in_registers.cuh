// A long float row held in the registers of one block, for the row-wise kernels (softmax,
// layer_norm) whose rows are too long for a warp. Included only by backend/cuda/*.cu.
//
// Those kernels make two or three passes over a row (a max, a sum, the output). Walking the row
// in memory for each pass reads it two or three times and, in 4-byte loads, keeps too few bytes
// in flight to reach the memory's bandwidth. Here each thread loads its share of the row once,
// as 16-byte float4s (thread t takes float4s t, t + blockDim.x, t + 2·blockDim.x, ...: a warp
// reads 512 contiguous bytes at a time), and every pass runs on registers. A row of D floats
// takes D / 4 float4s; up to 8 per thread of at most 1024 threads: rows up to 32768 floats.
// Longer rows, rows whose length is not a multiple of 4 and misaligned rows take the kernels'
// general path.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "autograd/backend/cuda/launch.cuh"

namespace sg::cuda {

inline constexpr int kMaxRowVecsPerThread = 8;
inline constexpr int kMaxRowThreads = 1024;

// This thread's float4s of a row, kVecs of them; slot k is float4 number at(k) of the row, and
// holds nothing when at(k) >= the row's float4 count (has(k) is false).
template <int kVecs>
struct RowSlice {
  float4 v[kVecs] = {};

  __device__ static int64_t at(int k) { return static_cast<int64_t>(k) * blockDim.x + threadIdx.x; }
  __device__ static bool has(int k, int64_t vecs) { return at(k) < vecs; }

  __device__ void load(const float* row, int64_t vecs) {
    const auto* p = reinterpret_cast<const float4*>(row);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (has(k, vecs)) v[k] = p[at(k)];
    }
  }
  __device__ void store(float* row, int64_t vecs) const {
    auto* p = reinterpret_cast<float4*>(row);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (has(k, vecs)) p[at(k)] = v[k];
    }
  }
};

// f applied to each lane of a float4.
template <typename F>
__device__ inline float4 map4(float4 a, F f) {
  return make_float4(f(a.x), f(a.y), f(a.z), f(a.w));
}
template <typename F>
__device__ inline float4 map4(float4 a, float4 b, F f) {
  return make_float4(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
}
template <typename F>
__device__ inline float4 map4(float4 a, float4 b, float4 c, F f) {
  return make_float4(f(a.x, b.x, c.x), f(a.y, b.y, c.y), f(a.z, b.z, c.z), f(a.w, b.w, c.w));
}
__device__ inline float sum4(float4 a) { return (a.x + a.y) + (a.z + a.w); }
__device__ inline float max4(float4 a) { return fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)); }

// The current device's multiprocessors (read once per device).
inline int multiprocessors() {
  static std::atomic<int> counts[64] = {};
  int device = 0;
  SG_CUDA_CHECK(cudaGetDevice(&device));
  std::atomic<int>& count = counts[device % 64];
  if (count.load() == 0) {
    int value = 0;
    SG_CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device));
    count.store(value);
  }
  return count.load();
}

// Blocks for a grid-stride loop over rows, one block per row.
inline unsigned blocks_for_rows(int64_t rows) {
  return static_cast<unsigned>(std::min<int64_t>(rows, kMaxBlocks * 16));
}

inline bool aligned_for_float4(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % sizeof(float4) == 0;
}

// Whether a float row of D elements can live in registers, for a kernel that holds `rows` such
// rows at once (softmax's backward holds g and y): two rows of 8 float4s per thread would pass
// the 64 registers a thread of a 1024-thread block may have, so two rows stop at 4 per thread.
// (The float4 pointers are checked by the caller, with aligned_for_float4.)
inline bool row_fits_in_registers(int64_t D, int rows = 1) {
  const int per_thread = rows == 1 ? kMaxRowVecsPerThread : kMaxRowVecsPerThread / 2;
  return D % 4 == 0 && D / 4 <= int64_t{per_thread} * (rows == 1 ? kMaxRowThreads : 512);
}

// Calls launch(std::integral_constant<int, kVecs>{}, threads) with the fewest float4s per
// thread (1, 2, 4 or 8) that keep the block at most 512 threads (1024 for the longest rows), and
// threads a multiple of 32 that covers the row's D / 4 float4s. Needs row_fits_in_registers(D,
// rows); kernels that hold two rows pass kRows = 2, so that 8 float4s per thread is never built.
template <int kRows = 1, typename Launch>
void launch_row_in_registers(int64_t D, Launch launch) {
  const int64_t vecs = D / 4;
  auto threads_for = [&](int64_t per_thread) {
    return static_cast<int>(ceil_div(ceil_div(vecs, per_thread), kWarpSize) * kWarpSize);
  };
  if (vecs <= 512) return launch(std::integral_constant<int, 1>{}, threads_for(1));
  if (vecs <= 1024) return launch(std::integral_constant<int, 2>{}, threads_for(2));
  if constexpr (kRows == 1) {
    if (vecs > 2048) return launch(std::integral_constant<int, 8>{}, threads_for(8));
  }
  return launch(std::integral_constant<int, 4>{}, threads_for(4));
}

}  // namespace sg::cuda
