// Copies whose innermost contiguous runs are short (copy_rows.h).
#include "autograd/backend/cpu_fast/copy_rows.h"

#include "autograd/backend/cpu/strided_loop.h"
#include "autograd/dtype.h"

namespace sg::cpu {

namespace {

// One row of a fixed number of elements: the compiler emits a few vector moves (std::copy_n would
// call memmove).
template <int64_t Row, typename T>
void copy_row(T* __restrict out, const T* __restrict in) {
  for (int64_t i = 0; i < Row; ++i) out[i] = in[i];
}

// Copies rows of `Row` contiguous elements whose starts the loop over the outer dims gives.
template <int64_t Row, typename T>
void copy_rows_of(const MergedDims<2>& rows, T* dst, const T* src) {
  auto run = [&](const Offsets<2>& at, int64_t n, const Offsets<2>& step) {
    for (int64_t r = 0; r < n; ++r)
      copy_row<Row>(dst + at[0] + r * step[0], src + at[1] + r * step[1]);
  };
  for_each_merged_run(rows, Offsets<2>{}, run);
}

template <typename T>
bool copy_short_rows_typed(const Tensor& src, const Tensor& dst) {
  MergedDims<2> m;
  if (!merge_dims(dst.shape(), {&dst.strides(), &src.strides()}, 0, dst.shape().size(), m) ||
      m.empty || m.ndim < 2) {
    return false;
  }
  const size_t inner = m.ndim - 1;
  if (m.strides[0][inner] != 1 || m.strides[1][inner] != 1) return false;
  MergedDims<2> rows = m;  // the same dims without the innermost: one run per row
  rows.ndim = inner;
  T* d = dst.data_ptr<T>();
  const T* s = src.data_ptr<T>();
  switch (m.sizes[inner]) {
    case 4:
      copy_rows_of<4>(rows, d, s);
      return true;
    case 8:
      copy_rows_of<8>(rows, d, s);
      return true;
    case 16:
      copy_rows_of<16>(rows, d, s);
      return true;
    case 32:
      copy_rows_of<32>(rows, d, s);
      return true;
    case 64:
      copy_rows_of<64>(rows, d, s);
      return true;
    default:
      return false;
  }
}

}  // namespace

bool copy_short_rows(const Tensor& src, const Tensor& dst) {
  if (src.dtype() != dst.dtype()) return false;
  return dispatch_dtype_and_bfloat16(
      "copy", dst.dtype(), [&]<typename T>() { return copy_short_rows_typed<T>(src, dst); });
}

}  // namespace sg::cpu
