// CUDA reductions: sum, max, min over the trailing `reduced_dims` dims of a strided view. The
// CUDA twin of cpu/reduce.cpp, with two ways to share out the work, chosen by where the reduced
// elements lie in memory:
//
//   rows:    one block per output element, its threads striding through the reduced elements
//            (they are adjacent in memory: x.sum(-1), softmax's statistics, a whole-tensor sum);
//   columns: adjacent threads own adjacent output elements and walk the reduced dims together
//            (the reduced elements are far apart but neighbouring outputs are neighbours: a bias
//            gradient, g [B*T, D] summed over dim 0, which is most of sum_to's work).
//
// Either way each thread reads memory that its warp's neighbours read next to it (coalesced).
// Sums over one dim of a one-dim layout (almost all of them) take kernels of their own that keep
// more loads in flight (sum_adjacent_rows_kernel, sum_strided_columns_kernel).
// Float sums accumulate in the element type, as PyTorch does on the GPU (the CPU backend uses
// double); the tree order keeps the error to a few ulps times log2(n).
#include <cstdint>
#include <type_traits>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/backend/elementwise_math.h"
#include "autograd/factory.h"

namespace sg::cuda {

namespace {

// A candidate for max/min: the value and its position among the reduced elements (row-major);
// index -1 is "none yet". (No constructors: it lives in __shared__ memory.)
template <typename T>
struct Extreme {
  T value;
  int64_t index;
};

template <typename T>
__device__ Extreme<T> shfl_xor(Extreme<T> v, int lane_mask) {
  return {sg::cuda::shfl_xor(v.value, lane_mask), sg::cuda::shfl_xor(v.index, lane_mask)};
}

// The better of two candidates, as cpu/reduce.cpp picks them: a NaN beats everything (the first
// NaN wins), then the larger (max) or smaller (min) value, then the earlier position. A total
// order, so it can combine partial results in any grouping.
template <typename T>
struct PickExtreme {
  bool want_max;
  __device__ Extreme<T> operator()(Extreme<T> a, Extreme<T> b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool a_nan = elementwise::is_nan(a.value), b_nan = elementwise::is_nan(b.value);
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a.index < b.index ? a : b;
      return a_nan ? a : b;
    }
    if (a.value == b.value) return a.index < b.index ? a : b;
    return (want_max ? a.value > b.value : a.value < b.value) ? a : b;
  }
};

struct ReduceArgs {
  ReduceOp op;
  StridedLayout<1> outer;  // where each output element's block of x starts
  StridedLayout<1> inner;  // where each reduced element lies within a block
  int64_t n_out, n_in;
};

// rows: block b reduces output elements b, b + gridDim.x, ...
template <typename T>
__global__ void reduce_rows_kernel(ReduceArgs args, const T* x, T* out, int64_t* indices) {
  for (int64_t o = blockIdx.x; o < args.n_out; o += gridDim.x) {
    int64_t start[1];
    args.outer.offsets(o, start);
    const T* block = x + start[0];
    if (args.op == ReduceOp::Sum) {
      T acc = T(0);
      for (int64_t j = threadIdx.x; j < args.n_in; j += blockDim.x) {
        int64_t at[1];
        args.inner.offsets(j, at);
        acc += block[at[0]];
      }
      acc = block_reduce(acc, SumOp{}, T(0));
      if (threadIdx.x == 0) out[o] = acc;
    } else {
      const PickExtreme<T> pick{args.op == ReduceOp::Max};
      Extreme<T> best{T(0), -1};
      for (int64_t j = threadIdx.x; j < args.n_in; j += blockDim.x) {
        int64_t at[1];
        args.inner.offsets(j, at);
        best = pick(best, Extreme<T>{block[at[0]], j});
      }
      best = block_reduce(best, pick, Extreme<T>{T(0), -1});
      if (threadIdx.x == 0) {
        out[o] = best.value;
        if (indices != nullptr) indices[o] = best.index;
      }
    }
  }
}

// columns: a block of kColumns x blockDim.y threads; threadIdx.x picks the output element,
// threadIdx.y a share of the reduced elements, and the shares are added up in shared memory.
// A large sum is also cut into chunks of `chunk` reduced elements (blockIdx.y; launch.cuh's
// "column sums cut into chunks"): each block then writes its chunk's sums to row blockIdx.y of a
// [chunks, n_out] `out`.
constexpr int kColumns = 32;
constexpr int kMaxRowsPerColumn = 16;

template <typename T>
__global__ void reduce_columns_kernel(ReduceArgs args, const T* x, T* out, int64_t* indices,
                                      int64_t chunk) {
  __shared__ Extreme<T> partial[kMaxRowsPerColumn][kColumns];
  const int64_t o = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  const bool active = o < args.n_out;  // no early return: every thread reaches __syncthreads
  int64_t start[1] = {0};
  if (active) args.outer.offsets(o, start);
  const T* block = x + start[0];
  const PickExtreme<T> pick{args.op == ReduceOp::Max};
  Extreme<T> mine{T(0), args.op == ReduceOp::Sum ? 0 : -1};
  const int64_t first = static_cast<int64_t>(blockIdx.y) * chunk;
  const int64_t end = first + chunk < args.n_in ? first + chunk : args.n_in;
  if (active) {
    for (int64_t j = first + threadIdx.y; j < end; j += blockDim.y) {
      int64_t at[1];
      args.inner.offsets(j, at);
      if (args.op == ReduceOp::Sum) {
        mine.value += block[at[0]];
      } else {
        mine = pick(mine, Extreme<T>{block[at[0]], j});
      }
    }
  }
  partial[threadIdx.y][threadIdx.x] = mine;
  __syncthreads();
  if (threadIdx.y == 0 && active) {
    Extreme<T> total = partial[0][threadIdx.x];
    for (int r = 1; r < static_cast<int>(blockDim.y); ++r) {
      const Extreme<T> next = partial[r][threadIdx.x];
      if (args.op == ReduceOp::Sum) {
        total.value += next.value;
      } else {
        total = pick(total, next);
      }
    }
    out[static_cast<int64_t>(blockIdx.y) * args.n_out + o] = total.value;
    if (indices != nullptr && args.op != ReduceOp::Sum) indices[o] = total.index;
  }
}

// ---- sums whose reduced elements lie one stride apart (the common case, and the hot one) ----
// The kernels above walk any strided view one element per thread and iteration: one 4-byte load
// in flight per thread, about a third of an H100's bandwidth on [8192, 4096]. These read more at
// once: a row's adjacent elements as float4s, a column's elements four rows at a time.

// Sums of rows of n_in adjacent elements, row o starting at x + o * n_in.
template <typename T>
__global__ void sum_adjacent_rows_kernel(const T* x, T* out, int64_t n_out, int64_t n_in) {
  for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    const T* row = x + o * n_in;
    T acc = T(0);
    int64_t tail = 0;  // where the scalar loop starts
    if constexpr (std::is_same_v<T, float>) {
      if ((reinterpret_cast<uintptr_t>(row) & 15) == 0) {
        const auto* row4 = reinterpret_cast<const float4*>(row);
        for (int64_t j = threadIdx.x; j < n_in / 4; j += blockDim.x) {
          const float4 v = row4[j];
          acc += (v.x + v.y) + (v.z + v.w);
        }
        tail = n_in / 4 * 4;
      }
    }
    for (int64_t j = tail + threadIdx.x; j < n_in; j += blockDim.x) acc += row[j];
    acc = block_reduce(acc, SumOp{}, T(0));
    if (threadIdx.x == 0) out[o] = acc;
  }
}

// Sums of columns: output o adds x[o + j * row_stride] over j in its chunk (blockIdx.y), as
// reduce_columns_kernel shares them out, with four loads in flight per thread.
template <typename T>
__global__ void sum_strided_columns_kernel(const T* x, T* out, int64_t n_out, int64_t n_in,
                                           int64_t row_stride, int64_t chunk) {
  __shared__ T partial[kMaxRowsPerColumn][kColumns];
  const int64_t o = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * chunk;
  const int64_t end = first + chunk < n_in ? first + chunk : n_in;
  T acc[4] = {T(0), T(0), T(0), T(0)};
  if (o < n_out) {  // no early return: every thread reaches __syncthreads
    const T* column = x + o;
    const int64_t step = blockDim.y;
    int64_t j = first + threadIdx.y;
    for (; j + 3 * step < end; j += 4 * step) {
#pragma unroll
      for (int u = 0; u < 4; ++u) acc[u] += column[(j + u * step) * row_stride];
    }
    for (; j < end; j += step) acc[0] += column[j * row_stride];
  }
  partial[threadIdx.y][threadIdx.x] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  __syncthreads();
  if (threadIdx.y == 0 && o < n_out) {
    T total = partial[0][threadIdx.x];
    for (int r = 1; r < static_cast<int>(blockDim.y); ++r) total += partial[r][threadIdx.x];
    out[static_cast<int64_t>(blockIdx.y) * n_out + o] = total;
  }
}

template <typename T>
void reduce_typed(Backend& backend, ReduceOp op, const Tensor& x, int64_t reduced_dims,
                  const Tensor& out, const Tensor& indices) {
  const Shape outer(x.shape().begin(), x.shape().end() - reduced_dims);
  const Strides outer_strides(x.strides().begin(), x.strides().end() - reduced_dims);
  const Shape inner(x.shape().end() - reduced_dims, x.shape().end());
  const Strides inner_strides(x.strides().end() - reduced_dims, x.strides().end());
  ReduceArgs args{op, make_layout<1>(op_name(op), outer, {&outer_strides}),
                  make_layout<1>(op_name(op), inner, {&inner_strides}), numel_of(outer),
                  numel_of(inner)};
  if (args.n_out == 0) return;
  if (args.n_in == 0) return backend.fill(out, 0.0);  // a sum of nothing (max/min: refused)
  T* o = out.data_ptr<T>();
  int64_t* idx = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
  const T* px = x.data_ptr<T>();

  // Columns when neighbouring outputs are neighbours in memory but reduced elements are not, or
  // when there are too few reduced elements to keep a block busy.
  const int64_t inner_step = args.inner.strides[0][args.inner.ndim - 1];
  const int64_t outer_step = args.outer.strides[0][args.outer.ndim - 1];
  const bool columns =
      args.n_out > 1 && ((outer_step == 1 && inner_step != 1) || args.n_in < kWarpSize);
  // One dim each side: the outputs one apart and the reduced elements one stride apart (a bias
  // gradient), or rows of adjacent elements one after the other (x.sum(-1)).
  const bool strided_sum = op == ReduceOp::Sum && args.outer.ndim == 1 && args.inner.ndim == 1;
  if (columns) {
    const int rows =
        static_cast<int>(std::min<int64_t>(next_power_of_two(args.n_in), kMaxRowsPerColumn));
    const dim3 block(kColumns, static_cast<unsigned>(rows));
    const int64_t column_blocks = ceil_div(args.n_out, kColumns);
    const int64_t chunks = op == ReduceOp::Sum ? row_chunks_for(args.n_in, column_blocks) : 1;
    const int64_t chunk = ceil_div(args.n_in, chunks);
    const dim3 grid(static_cast<unsigned>(column_blocks), static_cast<unsigned>(chunks));
    Tensor partial = chunks == 1 ? Tensor() : empty({chunks, args.n_out}, out.options());
    T* sums = chunks == 1 ? o : partial.data_ptr<T>();
    if (strided_sum && outer_step == 1) {
      sum_strided_columns_kernel<<<grid, block, 0, launch_stream()>>>(px, sums, args.n_out,
                                                                      args.n_in, inner_step, chunk);
    } else {
      reduce_columns_kernel<<<grid, block, 0, launch_stream()>>>(args, px, sums, idx, chunk);
    }
    if (chunks > 1) {
      SG_CUDA_CHECK_LAUNCH();
      launch_sum_chunks(partial.data_ptr<T>(), chunks, args.n_out, o);
    }
  } else if (strided_sum && inner_step == 1 && (args.n_out == 1 || outer_step == args.n_in)) {
    const int64_t per_thread = std::is_same_v<T, float> ? 4 : 1;  // a float4 each
    const int threads = static_cast<int>(
        std::clamp<int64_t>(next_power_of_two(ceil_div(args.n_in, per_thread)), kWarpSize, 512));
    const auto grid = static_cast<unsigned>(std::min<int64_t>(args.n_out, kMaxBlocks * 16));
    sum_adjacent_rows_kernel<<<grid, threads, 0, launch_stream()>>>(px, o, args.n_out, args.n_in);
  } else {
    const int threads =
        static_cast<int>(std::clamp<int64_t>(next_power_of_two(args.n_in), kWarpSize, 512));
    const auto grid = static_cast<unsigned>(std::min<int64_t>(args.n_out, kMaxBlocks * 16));
    reduce_rows_kernel<<<grid, threads, 0, launch_stream()>>>(args, px, o, idx);
  }
  SG_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
                         const Tensor& indices) {
  Scope scope(*this);
  // Max and min over an empty dim were refused by the op (ops/reduce.cpp).
  dispatch_dtype(op_name(op), x.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      SG_FAIL("{}: not defined for bool tensors", op_name(op));
    } else {
      reduce_typed<T>(*this, op, x, reduced_dims, out, indices);
    }
  });
}

}  // namespace sg::cuda
