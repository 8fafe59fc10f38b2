// CUDA matrix multiply through cuBLAS (the only file that calls it). The CUDA twin of
// cpu/gemm.cpp, with one more twist: cuBLAS is column-major.
//
// A row-major matrix read as column-major is its transpose. So for row-major C = A·B we ask
// cuBLAS for the column-major product Cᵀ = Bᵀ·Aᵀ: the same call with A and B swapped (and M and
// N), and C comes out row-major without any copy. Transposed views are expressed by strides as
// on the CPU (a row-major "N" operand or a transposed "T" one), and a batch stride of 0 repeats
// one matrix for the whole batch; all batches go in one strided-batched call.
#include <climits>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/factory.h"

namespace sg::cuda {

namespace {

struct CublasMatrix {
  cublasOperation_t op = CUBLAS_OP_N;  // N: row-major as given; T: a transposed view
  int64_t ld = 1;                      // leading dimension
  int64_t batch_stride = 0;            // elements between consecutive matrices (0 = broadcast)
  Tensor data;                         // the view itself, or a contiguous copy of it
};

// Describes m [batch, rows, cols] to cuBLAS, copying only when its strides cannot be expressed
// (the same rules as cpu/gemm.cpp's as_blas_matrix, plus: cuBLAS takes leading dims as int).
CublasMatrix as_cublas_matrix(const Tensor& m) {
  const int64_t rows = m.size(1), cols = m.size(2);
  // A dim of size 1 is never stepped along, so its stride is free: pick one cuBLAS accepts.
  int64_t row_stride = rows == 1 ? std::max<int64_t>(cols, 1) : m.stride(1);
  int64_t col_stride = cols == 1 ? 1 : m.stride(2);
  if (rows == 1 && cols > 1 && col_stride != 1) row_stride = 1;  // a single strided row
  CublasMatrix out;
  out.batch_stride = m.size(0) == 1 ? 0 : m.stride(0);
  out.data = m;
  if (col_stride == 1 && row_stride >= std::max<int64_t>(cols, 1) && row_stride <= INT_MAX) {
    out.op = CUBLAS_OP_N;
    out.ld = row_stride;
  } else if (row_stride == 1 && col_stride >= std::max<int64_t>(rows, 1) && col_stride <= INT_MAX) {
    out.op = CUBLAS_OP_T;
    out.ld = col_stride;
  } else {
    out.data = empty(m.shape(), m.options());
    copy(m, out.data);
    out.op = CUBLAS_OP_N;
    out.ld = std::max<int64_t>(cols, 1);
    out.batch_stride = m.size(0) == 1 ? 0 : rows * cols;
  }
  return out;
}

}  // namespace

void gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  SG_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX && batch <= INT_MAX,
           "matmul: sizes M={} N={} K={} (batch {}) exceed what cuBLAS can index", M, N, K, batch);
  if (batch == 0 || M == 0 || N == 0) return;
  if (K == 0) return accumulate ? void() : fill(out, 0.0);  // a sum of nothing
  const CublasMatrix A = as_cublas_matrix(a), B = as_cublas_matrix(b);
  cublasHandle_t handle = cublas_handle();
  // Column-major Cᵀ [N, M] = Bᵀ [N, K] · Aᵀ [K, M]; ldc = N because C is row-major contiguous.
  dispatch_floating("matmul", out.dtype(), [&]<typename T>() {
    const T alpha = 1, beta = accumulate ? 1 : 0;
    if constexpr (std::is_same_v<T, float>) {
      SG_CUBLAS_CHECK(cublas_api().sgemm_strided_batched(
          handle, B.op, A.op, int(N), int(M), int(K), &alpha, B.data.data_ptr<float>(), int(B.ld),
          B.batch_stride, A.data.data_ptr<float>(), int(A.ld), A.batch_stride, &beta,
          out.data_ptr<float>(), int(N), M * N, int(batch)));
    } else {
      SG_CUBLAS_CHECK(cublas_api().dgemm_strided_batched(
          handle, B.op, A.op, int(N), int(M), int(K), &alpha, B.data.data_ptr<double>(), int(B.ld),
          B.batch_stride, A.data.data_ptr<double>(), int(A.ld), A.batch_stride, &beta,
          out.data_ptr<double>(), int(N), M * N, int(batch)));
    }
  });
}

}  // namespace sg::cuda
