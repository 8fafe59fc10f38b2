// CPU indexing kernels: index_select / index_add (whole slices, the embedding lookup and its
// backward) and gather / scatter_add (one element per position).
#include <type_traits>

#include "autograd/backend/cpu/cpu_backend.h"

namespace sg::cpu {

namespace {

int64_t checked_index(std::string_view op, int64_t i, int64_t size, int64_t dim) {
  // Negative indices are an error, as in PyTorch's index_select and gather.
  SG_CHECK(i >= 0 && i < size, "{}: index {} is out of range for dim {} of size {}", op, i, dim,
           size);
  return i;
}

// Calls f(index_pos, x_pos) for every element of a contiguous index tensor, where x_pos is the
// flat position in contiguous x with coordinate `dim` replaced by the index value.
template <typename F>
void for_each_gathered(std::string_view op, const Shape& x_shape, const Tensor& index, int64_t dim,
                       F f) {
  const Shape& shape = index.shape();
  const int64_t nd = static_cast<int64_t>(shape.size());
  const Strides x_strides = contiguous_strides(x_shape);
  const int64_t* pi = index.data_ptr<int64_t>();
  std::vector<int64_t> coord(nd, 0);
  const int64_t n = index.numel();
  int64_t x_base = 0;  // x offset of coord, without the dim term
  for (int64_t p = 0; p < n; ++p) {
    int64_t i = checked_index(op, pi[p], x_shape[dim], dim);
    f(p, x_base + i * x_strides[dim]);
    for (int64_t d = nd - 1; d >= 0; --d) {  // odometer step
      if (++coord[d] < shape[d]) {
        if (d != dim) x_base += x_strides[d];
        break;
      }
      if (d != dim) x_base -= (shape[d] - 1) * x_strides[d];
      coord[d] = 0;
    }
  }
}

}  // namespace

void CpuBackend::index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
                              std::string_view op) {
  DimLayout l = dim_layout(x.shape(), dim);
  const int64_t n = index.numel();
  const int64_t* pi = index.data_ptr<int64_t>();
  dispatch_dtype_and_bfloat16("index_select", x.dtype(), [&]<typename T>() {
    const T* px = x.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for (int64_t k = 0; k < n; ++k) {
      int64_t row = checked_index(op, pi[k], l.D, dim);
      for (int64_t o = 0; o < l.outer; ++o) {
        const T* src = px + (o * l.D + row) * l.inner;
        T* dst = po + (o * n + k) * l.inner;
        std::copy(src, src + l.inner, dst);
      }
    }
  });
}

void CpuBackend::index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  DimLayout l = dim_layout(out.shape(), dim);
  const int64_t n = index.numel();
  const int64_t* pi = index.data_ptr<int64_t>();
  dispatch_dtype("index_add", out.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      SG_FAIL("index_add: not defined for bool tensors");
    } else {
      const T* ps = src.data_ptr<T>();
      T* po = out.data_ptr<T>();
      for (int64_t k = 0; k < n; ++k) {
        int64_t row = checked_index("index_add", pi[k], l.D, dim);
        for (int64_t o = 0; o < l.outer; ++o) {
          const T* s = ps + (o * n + k) * l.inner;
          T* d = po + (o * l.D + row) * l.inner;
          for (int64_t i = 0; i < l.inner; ++i) d[i] += s[i];
        }
      }
    }
  });
}

void CpuBackend::gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
                        std::string_view op) {
  dispatch_dtype_and_bfloat16("gather", x.dtype(), [&]<typename T>() {
    const T* px = x.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for_each_gathered(op, x.shape(), index, dim,
                      [&](int64_t p, int64_t x_pos) { po[p] = px[x_pos]; });
  });
}

void CpuBackend::scatter_add(const Tensor& out, int64_t dim, const Tensor& index,
                             const Tensor& src) {
  dispatch_dtype("scatter_add", out.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      SG_FAIL("scatter_add: not defined for bool tensors");
    } else {
      const T* ps = src.data_ptr<T>();
      T* po = out.data_ptr<T>();
      for_each_gathered("scatter_add", out.shape(), index, dim,
                        [&](int64_t p, int64_t out_pos) { po[out_pos] += ps[p]; });
    }
  });
}

}  // namespace sg::cpu
