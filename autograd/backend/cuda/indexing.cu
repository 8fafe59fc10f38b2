// CUDA indexing kernels: index_select / index_add (whole slices: the embedding lookup and its
// backward) and gather / scatter_add (one element per position). The CUDA twin of
// cpu/indexing.cpp: one thread per element of the index's result.
//
// The backward kernels add with atomicAdd, because two positions may name the same row (the same
// token twice in a batch): the order of those additions varies from run to run, so float
// gradients may differ in the last bits between runs (PyTorch's index_add_ behaves alike).
// A bad index cannot throw inside a kernel: it is reported through launch.cuh's IndexErrorRecord
// and thrown by the backend at its next call (at the latest when data is copied to the host).
#include <type_traits>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"

namespace sg::cuda {

namespace {

// Elements are moved as raw bits of their size (1, 2, 4 or 8 bytes): one kernel per size instead
// of one per dtype, for the kernels that only copy.
template <typename F>
void dispatch_element_size(DType dtype, F&& f) {
  switch (dtype_size(dtype)) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    default:
      return f.template operator()<uint64_t>();
  }
}

// out [outer, n, inner] = x [outer, D, inner] at rows index[0..n).
template <typename E>
__global__ void index_select_kernel(const E* x, const int64_t* index, E* out, int64_t total,
                                    int64_t n, DimLayout s, int64_t dim, IndexErrorSlot errors,
                                    int op) {
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t i = e % s.inner, k = (e / s.inner) % n, o = e / (s.inner * n);
    const int64_t row = index[k];
    if (row < 0 || row >= s.D) {
      report_bad_index(errors, op, row, s.D, dim);
      continue;
    }
    out[e] = x[(o * s.D + row) * s.inner + i];
  }
}

// out [outer, D, inner] at rows index[k] += src [outer, n, inner] at row k.
template <typename T>
__global__ void index_add_kernel(T* out, const int64_t* index, const T* src, int64_t total,
                                 int64_t n, DimLayout s, int64_t dim, IndexErrorSlot errors,
                                 int op) {
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t i = e % s.inner, k = (e / s.inner) % n, o = e / (s.inner * n);
    const int64_t row = index[k];
    if (row < 0 || row >= s.D) {
      report_bad_index(errors, op, row, s.D, dim);
      continue;
    }
    atomic_add(out + (o * s.D + row) * s.inner + i, src[e]);
  }
}

// For gather and scatter_add: the index's shape, and the contiguous strides of the tensor it
// points into (x for gather, out for scatter_add), whose size along `dim` is dim_size.
struct GatherShape {
  int ndim = 0;
  int dim = 0;
  int64_t dim_size = 0;
  int64_t index_sizes[kMaxDims] = {};
  int64_t target_strides[kMaxDims] = {};

  // Position in the target of index element p (row-major in the index), with the index value
  // `value` in place of the coordinate along dim.
  __device__ int64_t target_offset(int64_t p, int64_t value) const {
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t coordinate = p % index_sizes[d];
      p /= index_sizes[d];
      offset += (d == dim ? value : coordinate) * target_strides[d];
    }
    return offset;
  }
};

GatherShape gather_shape_of(std::string_view op, const Shape& target, const Tensor& index,
                            int64_t dim) {
  SG_CHECK(index.dim() <= kMaxDims, "{}: the CUDA kernel handles at most {} dims, got shape {}", op,
           kMaxDims, index.shape());
  GatherShape g;
  g.ndim = static_cast<int>(index.dim());
  g.dim = static_cast<int>(dim);
  g.dim_size = target[static_cast<size_t>(dim)];
  const Strides strides = contiguous_strides(target);
  for (int d = 0; d < g.ndim; ++d) {
    g.index_sizes[d] = index.size(d);
    g.target_strides[d] = strides[static_cast<size_t>(d)];
  }
  return g;
}

template <typename E>
__global__ void gather_kernel(const E* x, const int64_t* index, E* out, int64_t total,
                              GatherShape g, IndexErrorSlot errors, int op) {
  for (int64_t p = first_index(); p < total; p += grid_stride()) {
    const int64_t value = index[p];
    if (value < 0 || value >= g.dim_size) {
      report_bad_index(errors, op, value, g.dim_size, g.dim);
      continue;
    }
    out[p] = x[g.target_offset(p, value)];
  }
}

template <typename T>
__global__ void scatter_add_kernel(T* out, const int64_t* index, const T* src, int64_t total,
                                   GatherShape g, IndexErrorSlot errors, int op) {
  for (int64_t p = first_index(); p < total; p += grid_stride()) {
    const int64_t value = index[p];
    if (value < 0 || value >= g.dim_size) {
      report_bad_index(errors, op, value, g.dim_size, g.dim);
      continue;
    }
    atomic_add(out + g.target_offset(p, value), src[p]);
  }
}

}  // namespace

void CudaBackend::index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
                               std::string_view op) {
  Scope scope(*this);
  const int64_t total = out.numel();
  if (total == 0) return;
  const DimLayout s = dim_layout(x.shape(), dim);
  const int64_t n = index.numel();
  dispatch_element_size(x.dtype(), [&]<typename E>() {
    index_select_kernel<<<grid_for(total), kBlockSize, 0, launch_stream()>>>(
        static_cast<const E*>(x.raw_data()), index.data_ptr<int64_t>(),
        static_cast<E*>(out.raw_data()), total, n, s, dim, index_error_slot(), index_op_id(op));
    SG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::index_add(const Tensor& out, int64_t dim, const Tensor& index,
                            const Tensor& src) {
  Scope scope(*this);
  const int64_t total = src.numel();
  if (total == 0) return;
  const DimLayout s = dim_layout(out.shape(), dim);
  const int64_t n = index.numel();
  dispatch_dtype("index_add", out.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      SG_FAIL("index_add: not defined for bool tensors");
    } else {
      index_add_kernel<<<grid_for(total), kBlockSize, 0, launch_stream()>>>(
          out.data_ptr<T>(), index.data_ptr<int64_t>(), src.data_ptr<T>(), total, n, s, dim,
          index_error_slot(), index_op_id("index_add"));
      SG_CUDA_CHECK_LAUNCH();
    }
  });
}

void CudaBackend::gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
                         std::string_view op) {
  Scope scope(*this);
  const int64_t total = index.numel();
  if (total == 0) return;
  const GatherShape g = gather_shape_of(op, x.shape(), index, dim);
  dispatch_element_size(x.dtype(), [&]<typename E>() {
    gather_kernel<<<grid_for(total), kBlockSize, 0, launch_stream()>>>(
        static_cast<const E*>(x.raw_data()), index.data_ptr<int64_t>(),
        static_cast<E*>(out.raw_data()), total, g, index_error_slot(), index_op_id(op));
    SG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::scatter_add(const Tensor& out, int64_t dim, const Tensor& index,
                              const Tensor& src) {
  Scope scope(*this);
  const int64_t total = index.numel();
  if (total == 0) return;
  const GatherShape g = gather_shape_of("scatter_add", out.shape(), index, dim);
  dispatch_dtype("scatter_add", out.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      SG_FAIL("scatter_add: not defined for bool tensors");
    } else {
      scatter_add_kernel<<<grid_for(total), kBlockSize, 0, launch_stream()>>>(
          out.data_ptr<T>(), index.data_ptr<int64_t>(), src.data_ptr<T>(), total, g,
          index_error_slot(), index_op_id("scatter_add"));
      SG_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace sg::cuda
