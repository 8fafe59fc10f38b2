// What every CUDA kernel file shares: launch sizes (ceil_div, grid_for, grid-stride loops), warp
// and block reductions, device math overloads for float and double, and the record through which
// a kernel reports a bad index (a kernel cannot throw). Included only by backend/cuda/*.cu.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "autograd/backend/cuda/cuda_check.h"
#include "autograd/backend/cuda/index_error.h"
#include "autograd/backend/cuda/strided_layout.h"
#include "autograd/tensor.h"

namespace sg::cuda {

inline constexpr int kWarpSize = 32;
inline constexpr int kBlockSize = 256;  // threads per block for elementwise kernels
// Blocks of a grid-stride loop: enough to fill an H100 (132 SMs x 2048 threads) many times over;
// larger tensors loop inside the kernel instead of launching more blocks.
inline constexpr int64_t kMaxBlocks = 4096;

SG_HOST_DEVICE constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The smallest power of two >= n (and >= 1).
constexpr int64_t next_power_of_two(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// The stream every kernel is launched on: the current device's (CudaBackend::stream()), which a
// CUDA graph capture records from (cuda_graph.h). Kernels are launched as
// kernel<<<grid, block, 0, launch_stream()>>>.
cudaStream_t launch_stream();

// Blocks for a grid-stride loop over n items with `block` threads each.
inline unsigned grid_for(int64_t n, int block = kBlockSize) {
  return static_cast<unsigned>(std::clamp<int64_t>(ceil_div(n, block), 1, kMaxBlocks));
}

// for (int64_t i = first_index(); i < n; i += grid_stride()): every thread of the grid takes
// every grid_stride()-th item, so any n works with any grid.
__device__ inline int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_stride() { return static_cast<int64_t>(blockDim.x) * gridDim.x; }

// ---- reductions inside a warp and a block ----

struct SumOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};

template <typename T>
__device__ inline T shfl_xor(T v, int lane_mask) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}

// Every lane of the warp gets op over the 32 lanes' values (a butterfly: 5 exchanges).
template <typename T, typename Op>
__device__ T warp_reduce(T v, Op op) {
#pragma unroll
  for (int lane_mask = kWarpSize / 2; lane_mask > 0; lane_mask /= 2) {
    v = op(v, shfl_xor(v, lane_mask));
  }
  return v;
}

// Every thread of the (1-D, a multiple of 32 threads) block gets op over all threads' values:
// each warp reduces, warp 0 reduces the warps' results, and shared memory hands them around.
template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity) {
  __shared__ T partial[kWarpSize];
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int warps = static_cast<int>(blockDim.x) / kWarpSize;
  v = warp_reduce(v, op);
  __syncthreads();  // `partial` may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = warp_reduce(lane < warps ? partial[lane] : identity, op);
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  return partial[0];
}

// ---- column sums cut into chunks of rows (bias gradients, layer_norm's dweight and dbias) ----
// A sum over the rows of [R, C] by 32-column blocks has only C / 32 blocks: 128 for C = 4096,
// each walking all R rows, too few to keep the memory busy. Cut into chunks of rows (blockIdx.y),
// each block writes its chunk's sums to a [chunks, C] buffer, and sum_chunks_kernel adds the
// chunks up: one more launch, so small sums are not cut.

inline constexpr int64_t kColumnBlocksWanted = 2048;  // blocks of a column sum: the GPU many times
inline constexpr int64_t kMinRowsPerChunk = 256;

// The chunks to cut R rows summed by `column_blocks` blocks into (1: not cut).
inline int64_t row_chunks_for(int64_t rows, int64_t column_blocks) {
  if (rows < 4 * kMinRowsPerChunk) return 1;
  return std::clamp<int64_t>(
      std::min(ceil_div(kColumnBlocksWanted, column_blocks), rows / kMinRowsPerChunk), 1, 65535);
}

// out[c] = Σ_k partial[k, c] for partial [chunks, C]: a block of 32 columns x 32 shares of the
// chunks, the shares added up in shared memory (one thread per column walking hundreds of chunks
// alone was slow for C = 4096: a chain of dependent loads; bench/NOTES.md).
template <typename T>
__global__ void sum_chunks_kernel(const T* partial, int64_t chunks, int64_t C, T* out) {
  __shared__ T shares[kWarpSize][kWarpSize + 1];  // + 1: the column reads hit 32 banks
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kWarpSize + threadIdx.x;
  T total = 0;
  if (c < C) {
    for (int64_t k = threadIdx.y; k < chunks; k += kWarpSize) total += partial[k * C + c];
  }
  shares[threadIdx.y][threadIdx.x] = total;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int j = 1; j < kWarpSize; ++j) total += shares[j][threadIdx.x];
    out[c] = total;
  }
}

template <typename T>
void launch_sum_chunks(const T* partial, int64_t chunks, int64_t C, T* out) {
  sum_chunks_kernel<<<static_cast<unsigned>(ceil_div(C, kWarpSize)), dim3(kWarpSize, kWarpSize), 0,
                      launch_stream()>>>(partial, chunks, C, out);
}

// ---- the threads that share one row of a row-wise kernel (softmax, layer_norm) ----
// A warp (lanes 0..31 of a (32, kRowsPerWarpBlock) block: one row per warp, statistics combined
// with shuffles) for rows up to kWarpRowLimit elements; a whole 1-D block for longer rows.

inline constexpr int kRowsPerWarpBlock = 4;
inline constexpr int64_t kWarpRowLimit = 1024;
inline int block_threads_for(int64_t D) { return D > 8192 ? 512 : 256; }

// for (int64_t r = Group::first_row(); r < rows; r += Group::row_step()) visits the rows of a
// grid-stride loop with one row per group.
struct WarpGroup {
  __device__ static int64_t first_row() {
    return static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  }
  __device__ static int64_t row_step() { return static_cast<int64_t>(gridDim.x) * blockDim.y; }
  __device__ int rank() const { return static_cast<int>(threadIdx.x); }
  __device__ int size() const { return kWarpSize; }
  template <typename T, typename Op>
  __device__ T reduce(T v, Op op, T /*identity*/) const {
    return warp_reduce(v, op);
  }
};
struct BlockGroup {
  __device__ static int64_t first_row() { return blockIdx.x; }
  __device__ static int64_t row_step() { return gridDim.x; }
  __device__ int rank() const { return static_cast<int>(threadIdx.x); }
  __device__ int size() const { return static_cast<int>(blockDim.x); }
  template <typename T, typename Op>
  __device__ T reduce(T v, Op op, T identity) const {
    return block_reduce(v, op, identity);
  }
};

// atomicAdd for every dtype that index_add and scatter_add accumulate.
__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void atomic_add(int64_t* p, int64_t v) {
  // Two's complement: adding the bits as unsigned is adding the signed values.
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// ---- bad indices: a kernel cannot throw, so it leaves a note the host turns into sg::Error ----

// The first thread (of any kernel) with a bad index writes the record; later ones do nothing.
__device__ inline void report_bad_index(IndexErrorSlot slot, int op, int64_t index, int64_t size,
                                        int64_t dim) {
  if (atomicCAS(slot.claimed, 0, 1) != 0) return;
  volatile IndexErrorRecord* r = slot.record;
  r->op = op;
  r->index = index;
  r->size = size;
  r->dim = dim;
  __threadfence_system();  // the fields reach the host before `ready` does
  r->ready = 1;
}

// The number a kernel writes into IndexErrorRecord::op for the public op named `op` ("gather",
// "embedding", "cross_entropy"); the backend turns it back into the name for the error message.
int index_op_id(std::string_view op);

// For the current device (defined in cuda_backend.cu).
IndexErrorSlot index_error_slot();
cublasHandle_t cublas_handle();

}  // namespace sg::cuda
