// CUDA softmax and log_softmax along one dim, forward and backward. The CUDA twin of
// cpu/softmax.cpp: a contiguous tensor seen as [outer, D, inner], and the same three passes over
// each softmax row (max, then the normaliser, then the output).
//
// Who handles a row depends on its shape:
//   inner == 1, D <= 1024: one warp per row (attention scores, a small vocabulary): the row's
//                          statistics are combined with warp shuffles, no shared memory;
//   inner == 1, larger D:  one block per row (a large vocabulary);
//   inner > 1:             one thread per (outer, inner) column, walking D with stride `inner`
//                          (neighbouring threads read neighbouring addresses).
// masked_softmax (the attention softmax, fused with its masking) takes the first two ways.
// A float row longer than a warp handles is read once into the block's registers where it fits
// (row_in_registers.cuh), and the passes run there.
#include <cmath>
#include <type_traits>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/backend/cuda/row_in_registers.cuh"
#include "autograd/backend/elementwise_math.h"

namespace sg::cuda {

namespace {

template <typename T, typename Group>
__device__ void softmax_row(const T* x, T* y, int64_t D, bool log, Group group) {
  // pass 1: the max, so exp never overflows
  T m = -INFINITY;
  for (int64_t d = group.rank(); d < D; d += group.size()) m = x[d] > m ? x[d] : m;
  m = group.reduce(m, MaxOp{}, T(-INFINITY));
  // pass 2: the normaliser
  T total = 0;
  for (int64_t d = group.rank(); d < D; d += group.size()) total += elementwise::exp_of(x[d] - m);
  total = group.reduce(total, SumOp{}, T(0));
  // pass 3: write out
  if (log) {
    const T log_total = elementwise::log_of(total);
    for (int64_t d = group.rank(); d < D; d += group.size()) y[d] = x[d] - m - log_total;
  } else {
    const T inv = T(1) / total;
    for (int64_t d = group.rank(); d < D; d += group.size())
      y[d] = elementwise::exp_of(x[d] - m) * inv;
  }
}

template <typename T, typename Group>
__device__ void softmax_backward_row(const T* g, const T* y, T* dx, int64_t D, bool log,
                                     Group group) {
  // log_softmax: dx = g - exp(y) Σ g;   softmax: dx = y ⊙ (g - Σ g⊙y)
  T dot = 0;
  for (int64_t d = group.rank(); d < D; d += group.size()) dot += log ? g[d] : g[d] * y[d];
  dot = group.reduce(dot, SumOp{}, T(0));
  for (int64_t d = group.rank(); d < D; d += group.size()) {
    dx[d] = log ? g[d] - elementwise::exp_of(y[d]) * dot : y[d] * (g[d] - dot);
  }
}

template <typename T>
__global__ void softmax_warp_kernel(const T* x, T* y, int64_t rows, int64_t D, bool log) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < rows;
       r += step) {
    softmax_row(x + r * D, y + r * D, D, log, WarpGroup{});
  }
}

template <typename T>
__global__ void softmax_block_kernel(const T* x, T* y, int64_t rows, int64_t D, bool log) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    softmax_row(x + r * D, y + r * D, D, log, BlockGroup{});
  }
}

template <typename T>
__global__ void softmax_columns_kernel(const T* x, T* y, DimLayout s, bool log) {
  const int64_t n = s.outer * s.inner;
  for (int64_t t = first_index(); t < n; t += grid_stride()) {
    const int64_t base = (t / s.inner) * s.D * s.inner + t % s.inner;
    const T* xr = x + base;
    T* yr = y + base;
    T m = -INFINITY;
    for (int64_t d = 0; d < s.D; ++d) m = xr[d * s.inner] > m ? xr[d * s.inner] : m;
    T total = 0;
    for (int64_t d = 0; d < s.D; ++d) total += elementwise::exp_of(xr[d * s.inner] - m);
    if (log) {
      const T log_total = elementwise::log_of(total);
      for (int64_t d = 0; d < s.D; ++d) yr[d * s.inner] = xr[d * s.inner] - m - log_total;
    } else {
      const T inv = T(1) / total;
      for (int64_t d = 0; d < s.D; ++d)
        yr[d * s.inner] = elementwise::exp_of(xr[d * s.inner] - m) * inv;
    }
  }
}

template <typename T>
__global__ void softmax_backward_warp_kernel(const T* g, const T* y, T* dx, int64_t rows, int64_t D,
                                             bool log) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < rows;
       r += step) {
    softmax_backward_row(g + r * D, y + r * D, dx + r * D, D, log, WarpGroup{});
  }
}

template <typename T>
__global__ void softmax_backward_block_kernel(const T* g, const T* y, T* dx, int64_t rows,
                                              int64_t D, bool log) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    softmax_backward_row(g + r * D, y + r * D, dx + r * D, D, log, BlockGroup{});
  }
}

template <typename T>
__global__ void softmax_backward_columns_kernel(const T* g, const T* y, T* dx, DimLayout s,
                                                bool log) {
  const int64_t n = s.outer * s.inner;
  for (int64_t t = first_index(); t < n; t += grid_stride()) {
    const int64_t base = (t / s.inner) * s.D * s.inner + t % s.inner;
    T dot = 0;
    for (int64_t d = 0; d < s.D; ++d) {
      const int64_t k = base + d * s.inner;
      dot += log ? g[k] : g[k] * y[k];
    }
    for (int64_t d = 0; d < s.D; ++d) {
      const int64_t k = base + d * s.inner;
      dx[k] = log ? g[k] - elementwise::exp_of(y[k]) * dot : y[k] * (g[k] - dot);
    }
  }
}

// ---- long float rows in registers: one read of x (or of g and y), one write ----
// A NaN in a row makes its sum NaN, so the whole row is NaN, as on the general path.

template <int kVecs>
__global__ void __launch_bounds__(kMaxRowThreads)
    softmax_registers_kernel(const float* x, float* y, int64_t rows, int64_t D, bool log) {
  const int64_t vecs = D / 4;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    RowSlice<kVecs> row;
    row.load(x + r * D, vecs);
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (row.has(k, vecs)) m = fmaxf(m, max4(row.v[k]));
    }
    m = block_reduce(m, MaxOp{}, -INFINITY);
    float total = 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (row.has(k, vecs)) total += sum4(map4(row.v[k], [m](float v) { return expf(v - m); }));
    }
    total = block_reduce(total, SumOp{}, 0.0f);
    const float log_total = logf(total), inv = 1.0f / total;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      row.v[k] =
          map4(row.v[k], [=](float v) { return log ? v - m - log_total : expf(v - m) * inv; });
    }
    row.store(y + r * D, vecs);
  }
}

template <int kVecs>
__global__ void __launch_bounds__(512)
    softmax_backward_registers_kernel(const float* g, const float* y, float* dx, int64_t rows,
                                      int64_t D, bool log) {
  const int64_t vecs = D / 4;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    RowSlice<kVecs> gs, ys;
    gs.load(g + r * D, vecs);
    ys.load(y + r * D, vecs);
    float dot = 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (!gs.has(k, vecs)) continue;
      dot += log ? sum4(gs.v[k])
                 : sum4(map4(gs.v[k], ys.v[k], [](float a, float b) { return a * b; }));
    }
    dot = block_reduce(dot, SumOp{}, 0.0f);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      gs.v[k] = map4(gs.v[k], ys.v[k], [=](float gv, float yv) {
        return log ? gv - expf(yv) * dot : yv * (gv - dot);
      });
    }
    gs.store(dx + r * D, vecs);
  }
}

// The register paths: launched, and true, when T is float and the rows fit and are aligned;
// false (nothing launched) otherwise, for the general block path.
template <typename T>
bool softmax_in_registers(const T* x, T* y, const DimLayout& s, bool log) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    if (!row_fits_in_registers(s.D) || !aligned_for_float4(x) || !aligned_for_float4(y)) {
      return false;
    }
    launch_row_in_registers(s.D, [&]<int kVecs>(std::integral_constant<int, kVecs>, int threads) {
      softmax_registers_kernel<kVecs>
          <<<blocks_for_rows(s.outer), threads, 0, launch_stream()>>>(x, y, s.outer, s.D, log);
    });
    return true;
  }
}

template <typename T>
bool softmax_backward_in_registers(const T* g, const T* y, T* dx, const DimLayout& s, bool log) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    if (!row_fits_in_registers(s.D, 2) || !aligned_for_float4(g) || !aligned_for_float4(y) ||
        !aligned_for_float4(dx)) {
      return false;
    }
    launch_row_in_registers<2>(s.D, [&]<int kVecs>(std::integral_constant<int, kVecs>,
                                                   int threads) {
      softmax_backward_registers_kernel<kVecs>
          <<<blocks_for_rows(s.outer), threads, 0, launch_stream()>>>(g, y, dx, s.outer, s.D, log);
    });
    return true;
  }
}

// ---- masked_softmax: softmax over the entries a mask keeps, 0 elsewhere ----

// One row: keep[d * mask_step] says whether x[d] takes part. A row that keeps nothing (or only
// -inf scores) is all zeros, as in cpu/softmax.cpp.
template <typename T, typename Group>
__device__ void masked_softmax_row(const T* x, const bool* keep, int64_t mask_step, T* y, int64_t D,
                                   Group group) {
  T m = -INFINITY;
  for (int64_t d = group.rank(); d < D; d += group.size()) {
    if (keep[d * mask_step] && x[d] > m) m = x[d];
  }
  m = group.reduce(m, MaxOp{}, T(-INFINITY));
  if (m == T(-INFINITY)) {  // the same m in every thread of the group: all return together
    for (int64_t d = group.rank(); d < D; d += group.size()) y[d] = T(0);
    return;
  }
  T total = 0;
  for (int64_t d = group.rank(); d < D; d += group.size()) {
    if (keep[d * mask_step]) total += elementwise::exp_of(x[d] - m);
  }
  total = group.reduce(total, SumOp{}, T(0));
  const T inv = T(1) / total;
  for (int64_t d = group.rank(); d < D; d += group.size()) {
    y[d] = keep[d * mask_step] ? elementwise::exp_of(x[d] - m) * inv : T(0);
  }
}

// Row r of the mask starts at mask_rows.offsets(r): the mask may be a broadcast view.
template <typename T>
__global__ void masked_softmax_warp_kernel(const T* x, const bool* mask, StridedLayout<1> mask_rows,
                                           int64_t mask_step, T* y, int64_t rows, int64_t D) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y; r < rows;
       r += step) {
    int64_t at[1];
    mask_rows.offsets(r, at);
    masked_softmax_row(x + r * D, mask + at[0], mask_step, y + r * D, D, WarpGroup{});
  }
}

template <typename T>
__global__ void masked_softmax_block_kernel(const T* x, const bool* mask,
                                            StridedLayout<1> mask_rows, int64_t mask_step, T* y,
                                            int64_t rows, int64_t D) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t at[1];
    mask_rows.offsets(r, at);
    masked_softmax_row(x + r * D, mask + at[0], mask_step, y + r * D, D, BlockGroup{});
  }
}

}  // namespace

void CudaBackend::softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) {
  Scope scope(*this);
  if (x.numel() == 0) return;
  const DimLayout s = dim_layout(x.shape(), x.dim() == 0 ? 0 : dim);
  dispatch_floating(log ? "log_softmax" : "softmax", x.dtype(), [&]<typename T>() {
    const T* px = x.data_ptr<T>();
    T* po = out.data_ptr<T>();
    if (s.inner > 1) {
      softmax_columns_kernel<<<grid_for(s.outer * s.inner), kBlockSize, 0, launch_stream()>>>(
          px, po, s, log);
    } else if (s.D <= kWarpRowLimit) {
      const dim3 block(kWarpSize, kRowsPerWarpBlock);
      const auto grid = static_cast<unsigned>(
          std::min<int64_t>(ceil_div(s.outer, kRowsPerWarpBlock), kMaxBlocks * 16));
      softmax_warp_kernel<<<grid, block, 0, launch_stream()>>>(px, po, s.outer, s.D, log);
    } else if (!softmax_in_registers(px, po, s, log)) {
      softmax_block_kernel<<<blocks_for_rows(s.outer), block_threads_for(s.D), 0,
                             launch_stream()>>>(px, po, s.outer, s.D, log);
    }
    SG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                                   const Tensor& out) {
  Scope scope(*this);
  if (y.numel() == 0) return;
  const DimLayout s = dim_layout(y.shape(), y.dim() == 0 ? 0 : dim);
  dispatch_floating("softmax_backward", y.dtype(), [&]<typename T>() {
    const T* pg = grad.data_ptr<T>();
    const T* py = y.data_ptr<T>();
    T* po = out.data_ptr<T>();
    if (s.inner > 1) {
      softmax_backward_columns_kernel<<<grid_for(s.outer * s.inner), kBlockSize, 0,
                                        launch_stream()>>>(pg, py, po, s, log);
    } else if (s.D <= kWarpRowLimit) {
      const dim3 block(kWarpSize, kRowsPerWarpBlock);
      const auto grid = static_cast<unsigned>(
          std::min<int64_t>(ceil_div(s.outer, kRowsPerWarpBlock), kMaxBlocks * 16));
      softmax_backward_warp_kernel<<<grid, block, 0, launch_stream()>>>(pg, py, po, s.outer, s.D,
                                                                        log);
    } else if (!softmax_backward_in_registers(pg, py, po, s, log)) {
      softmax_backward_block_kernel<<<blocks_for_rows(s.outer), block_threads_for(s.D), 0,
                                      launch_stream()>>>(pg, py, po, s.outer, s.D, log);
    }
    SG_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sg::cuda

namespace sg::cuda {

bool CudaBackend::masked_softmax(const Tensor& x, const Tensor& mask, const Tensor& out) {
  Scope scope(*this);
  if (x.numel() == 0) return true;
  const bool scalar = x.dim() == 0;
  const int64_t D = scalar ? 1 : x.size(-1);
  const int64_t mask_step = scalar ? 0 : mask.stride(-1);
  const Shape rows_shape(x.shape().begin(), x.shape().end() - (scalar ? 0 : 1));
  const Strides mask_row_strides(mask.strides().begin(), mask.strides().end() - (scalar ? 0 : 1));
  const int64_t rows = numel_of(rows_shape);
  const auto mask_rows = make_layout<1>("masked_softmax", rows_shape, {&mask_row_strides});
  dispatch_floating("masked_softmax", x.dtype(), [&]<typename T>() {
    const T* px = x.data_ptr<T>();
    const bool* pm = mask.data_ptr<bool>();
    T* po = out.data_ptr<T>();
    if (D <= kWarpRowLimit) {
      const dim3 block(kWarpSize, kRowsPerWarpBlock);
      const auto grid = static_cast<unsigned>(
          std::min<int64_t>(ceil_div(rows, kRowsPerWarpBlock), kMaxBlocks * 16));
      masked_softmax_warp_kernel<<<grid, block, 0, launch_stream()>>>(px, pm, mask_rows, mask_step,
                                                                      po, rows, D);
    } else {
      const auto grid = static_cast<unsigned>(std::min<int64_t>(rows, kMaxBlocks * 16));
      masked_softmax_block_kernel<<<grid, block_threads_for(D), 0, launch_stream()>>>(
          px, pm, mask_rows, mask_step, po, rows, D);
    }
    SG_CUDA_CHECK_LAUNCH();
  });
  return true;
}

}  // namespace sg::cuda
