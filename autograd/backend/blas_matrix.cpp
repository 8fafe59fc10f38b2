#include "autograd/backend/blas_matrix.h"

#include <algorithm>
#include <climits>
#include <memory>

#include "autograd/backend/backend.h"
#include "autograd/factory.h"

namespace sg {

BlasMatrix as_blas_matrix(const Tensor& m) {
  const int64_t rows = m.size(1), cols = m.size(2);
  // A dim of size 1 is never stepped along, so its stride is free: pick one BLAS accepts.
  int64_t row_stride = rows == 1 ? std::max<int64_t>(cols, 1) : m.stride(1);
  const int64_t col_stride = cols == 1 ? 1 : m.stride(2);
  if (rows == 1 && cols > 1 && col_stride != 1) row_stride = 1;  // a single strided row
  BlasMatrix out;
  out.batch_stride = m.size(0) == 1 ? 0 : m.stride(0);
  out.data = m;
  if (col_stride == 1 && row_stride >= std::max<int64_t>(cols, 1) && row_stride <= INT_MAX) {
    out.ld = row_stride;
  } else if (row_stride == 1 && col_stride >= std::max<int64_t>(rows, 1) && col_stride <= INT_MAX) {
    out.transposed = true;
    out.ld = col_stride;
  } else {
    out.data = empty(m.shape(), m.options());
    backend_for(m.device()).copy(m, out.data);
    out.ld = std::max<int64_t>(cols, 1);
    out.batch_stride = m.size(0) == 1 ? 0 : rows * cols;
  }
  return out;
}

Tensor with_batch(const Tensor& m, int64_t batch) {
  auto impl = std::make_shared<TensorImpl>(*m.impl());
  impl->grad.reset();
  impl->grad_fn.reset();
  impl->requires_grad = false;
  impl->shape[0] = batch;
  impl->strides[0] = 0;
  return Tensor(std::move(impl));
}

}  // namespace sg
