// How a BLAS library (OpenBLAS on the CPU, cuBLAS on the GPU) sees one operand of a batched
// matrix product: a pointer, a leading dimension and a transpose flag, which is exactly a 2-D
// strided view whose last stride is 1 (rows as given, "N") or whose second-to-last stride is 1 (a
// transposed view, "T"). So x.transpose(-2, -1) reaches BLAS without a copy; only views that are
// neither (every other column, say) are copied first. Both backends' gemm use this description.
#pragma once

#include <cstdint>

#include "autograd/tensor.h"

namespace sg {

struct BlasMatrix {
  bool transposed =
      false;       // false: "N", row i at data + i * ld; true: "T", column j at data + j * ld
  int64_t ld = 1;  // leading dimension
  int64_t batch_stride = 0;  // elements between consecutive matrices (0 = broadcast)
  Tensor data;               // the view itself, or a contiguous copy of it
};

// Describes m [batch, rows, cols] to BLAS, copying it (on its own device) only when its strides
// cannot be expressed, or when a leading dimension would not fit the int that BLAS takes.
BlasMatrix as_blas_matrix(const Tensor& m);

// A batch [batch, rows, cols] whose matrices are all the same one (a batch stride of 0), or a
// batch of one matrix, seen as a batch of `batch` copies of its first matrix (a stride of 0; batch
// 1 takes the matrix alone). The bfloat16 products convert such a shared matrix once.
Tensor with_batch(const Tensor& m, int64_t batch);
// Whether m's matrices are all one matrix repeated (more than one of them, a batch stride of 0).
inline bool repeats_one_matrix(const Tensor& m) { return m.size(0) > 1 && m.stride(0) == 0; }

}  // namespace sg
