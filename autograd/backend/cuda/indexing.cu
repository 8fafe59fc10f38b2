// CUDA indexing kernels: index_select / index_add (whole slices: the embedding lookup and its
// backward) and gather / scatter_add (one element per position). The CUDA twin of
// cpu/indexing.cpp: one thread per element of the index's result.
//
// The backward kernels add with atomicAdd, because two positions may name the same row (the same
// token twice in a batch): the order of those additions varies from run to run, so float
// gradients may differ in the last bits between runs (PyTorch's index_add_ behaves alike). In
// deterministic mode (autograd/deterministic.h) they sort the positions by their target instead
// (CUB's radix sort, which is stable) and one thread adds each target's values in position order:
// the order of the CPU's loop, so the sums are the CPU's bits.
// A bad index cannot throw inside a kernel: it is reported through launch.cuh's IndexErrorRecord
// and thrown by the backend at its next call (at the latest when data is copied to the host).
#include <cub/device/device_radix_sort.cuh>

#include <bit>
#include <type_traits>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/deterministic.h"
#include "autograd/factory.h"

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

// ---- deterministic mode: each target's additions in position order ----

// Position k of index_add adds into row index[k]: its key. A bad index is reported and gets the
// key `limit` (one past every row), which sorts last and adds nowhere.
__global__ void row_keys_kernel(const int64_t* index, uint64_t* keys, int64_t* positions, int64_t n,
                                int64_t limit, int64_t dim, IndexErrorSlot errors, int op) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    const int64_t row = index[k];
    const bool bad = row < 0 || row >= limit;
    if (bad) report_bad_index(errors, op, row, limit, dim);
    keys[k] = static_cast<uint64_t>(bad ? limit : row);
    positions[k] = k;
  }
}

// Position p of scatter_add adds into element target_offset(p, index[p]) of out: its key.
__global__ void element_keys_kernel(const int64_t* index, uint64_t* keys, int64_t* positions,
                                    int64_t total, GatherShape g, int64_t limit,
                                    IndexErrorSlot errors, int op) {
  for (int64_t p = first_index(); p < total; p += grid_stride()) {
    const int64_t value = index[p];
    const bool bad = value < 0 || value >= g.dim_size;
    if (bad) report_bad_index(errors, op, value, g.dim_size, g.dim);
    keys[p] = static_cast<uint64_t>(bad ? limit : g.target_offset(p, value));
    positions[p] = p;
  }
}

// The n positions sorted by key, positions of one key in increasing order (a radix sort is
// stable). Keys lie in [0, limit]. Device work only, so a CUDA graph can capture it.
struct SortedPositions {
  Tensor keys;       // uint64 bits in an int64 tensor, [n]
  Tensor positions;  // int64, [n]
};

template <typename MakeKeys>
SortedPositions sort_positions_by_key(int64_t n, int64_t limit, const Device& device,
                                      MakeKeys&& make_keys) {
  const TensorOptions options = TensorOptions(kInt64).device(device);
  Tensor keys = empty({n}, options), positions = empty({n}, options);
  make_keys(reinterpret_cast<uint64_t*>(keys.data_ptr<int64_t>()), positions.data_ptr<int64_t>());
  SortedPositions sorted{empty({n}, options), empty({n}, options)};
  const auto* keys_in = reinterpret_cast<const uint64_t*>(keys.data_ptr<int64_t>());
  auto* keys_out = reinterpret_cast<uint64_t*>(sorted.keys.data_ptr<int64_t>());
  const int end_bit = std::max(1, static_cast<int>(std::bit_width(static_cast<uint64_t>(limit))));
  size_t scratch_bytes = 0;
  SG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, scratch_bytes, keys_in, keys_out, positions.data_ptr<int64_t>(),
      sorted.positions.data_ptr<int64_t>(), n, 0, end_bit, launch_stream()));
  Tensor scratch = empty({ceil_div(static_cast<int64_t>(scratch_bytes), 8) + 1}, options);
  SG_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      scratch.data_ptr<int64_t>(), scratch_bytes, keys_in, keys_out, positions.data_ptr<int64_t>(),
      sorted.positions.data_ptr<int64_t>(), n, 0, end_bit, launch_stream()));
  return sorted;
}

// index_add in a fixed order: the thread of (o, q, i) where sorted position q starts its row's run
// adds that run's src rows into out's row, in position order; the other threads have nothing to do.
template <typename T>
__global__ void ordered_index_add_kernel(T* out, const T* src, const uint64_t* keys,
                                         const int64_t* positions, int64_t total, int64_t n,
                                         DimLayout s) {
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const int64_t i = e % s.inner, q = (e / s.inner) % n, o = e / (s.inner * n);
    const uint64_t row = keys[q];
    if (row >= static_cast<uint64_t>(s.D) || (q > 0 && keys[q - 1] == row)) continue;
    T* target = out + (o * s.D + static_cast<int64_t>(row)) * s.inner + i;
    T sum = *target;
    for (int64_t r = q; r < n && keys[r] == row; ++r)
      sum += src[(o * n + positions[r]) * s.inner + i];
    *target = sum;
  }
}

// scatter_add in a fixed order: the thread of the first sorted position of each target element.
template <typename T>
__global__ void ordered_scatter_add_kernel(T* out, const T* src, const uint64_t* keys,
                                           const int64_t* positions, int64_t total, int64_t limit) {
  for (int64_t q = first_index(); q < total; q += grid_stride()) {
    const uint64_t target = keys[q];
    if (target >= static_cast<uint64_t>(limit) || (q > 0 && keys[q - 1] == target)) continue;
    T sum = out[target];
    for (int64_t r = q; r < total && keys[r] == target; ++r) sum += src[positions[r]];
    out[target] = sum;
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
  const int op = index_op_id("index_add");
  dispatch_dtype("index_add", out.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      SG_FAIL("index_add: not defined for bool tensors");
    } else if (are_deterministic_algorithms_enabled()) {
      const SortedPositions sorted =
          sort_positions_by_key(n, s.D, out.device(), [&](uint64_t* keys, int64_t* positions) {
            row_keys_kernel<<<grid_for(n), kBlockSize, 0, launch_stream()>>>(
                index.data_ptr<int64_t>(), keys, positions, n, s.D, dim, index_error_slot(), op);
            SG_CUDA_CHECK_LAUNCH();
          });
      ordered_index_add_kernel<<<grid_for(total), kBlockSize, 0, launch_stream()>>>(
          out.data_ptr<T>(), src.data_ptr<T>(),
          reinterpret_cast<const uint64_t*>(sorted.keys.data_ptr<int64_t>()),
          sorted.positions.data_ptr<int64_t>(), total, n, s);
      SG_CUDA_CHECK_LAUNCH();
    } else {
      index_add_kernel<<<grid_for(total), kBlockSize, 0, launch_stream()>>>(
          out.data_ptr<T>(), index.data_ptr<int64_t>(), src.data_ptr<T>(), total, n, s, dim,
          index_error_slot(), op);
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
  const int op = index_op_id("scatter_add");
  dispatch_dtype("scatter_add", out.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      SG_FAIL("scatter_add: not defined for bool tensors");
    } else if (are_deterministic_algorithms_enabled()) {
      const int64_t limit = out.numel();
      const SortedPositions sorted = sort_positions_by_key(
          total, limit, out.device(), [&](uint64_t* keys, int64_t* positions) {
            element_keys_kernel<<<grid_for(total), kBlockSize, 0, launch_stream()>>>(
                index.data_ptr<int64_t>(), keys, positions, total, g, limit, index_error_slot(),
                op);
            SG_CUDA_CHECK_LAUNCH();
          });
      ordered_scatter_add_kernel<<<grid_for(total), kBlockSize, 0, launch_stream()>>>(
          out.data_ptr<T>(), src.data_ptr<T>(),
          reinterpret_cast<const uint64_t*>(sorted.keys.data_ptr<int64_t>()),
          sorted.positions.data_ptr<int64_t>(), total, limit);
      SG_CUDA_CHECK_LAUNCH();
    } else {
      scatter_add_kernel<<<grid_for(total), kBlockSize, 0, launch_stream()>>>(
          out.data_ptr<T>(), index.data_ptr<int64_t>(), src.data_ptr<T>(), total, g,
          index_error_slot(), op);
      SG_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace sg::cuda
