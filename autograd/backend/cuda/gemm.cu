// CUDA matrix multiply through cuBLAS (the only file that calls it). The CUDA twin of
// cpu/gemm.cpp, with one more twist: cuBLAS is column-major.
//
// A row-major matrix read as column-major is its transpose. So for row-major C = A·B we ask
// cuBLAS for the column-major product Cᵀ = Bᵀ·Aᵀ: the same call with A and B swapped (and M and
// N), and C comes out row-major without any copy. Transposed views are expressed by strides as
// on the CPU, by the same as_blas_matrix (a row-major "N" operand or a transposed "T" one), and a
// batch stride of 0 repeats one matrix for the whole batch; all batches go in one strided-batched
// call.
#include <climits>

#include "autograd/backend/blas_matrix.h"
#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/factory.h"

namespace sg::cuda {

namespace {

// An operand as cuBLAS takes it: BLAS's description (blas_matrix.h) as a cuBLAS operation.
cublasOperation_t op_of(const BlasMatrix& m) { return m.transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

void CudaBackend::gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  Scope scope(*this);
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  SG_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX && batch <= INT_MAX,
           "matmul: sizes M={} N={} K={} (batch {}) exceed what cuBLAS can index", M, N, K, batch);
  if (batch == 0 || M == 0 || N == 0) return;
  if (K == 0) return accumulate ? void() : fill(out, 0.0);  // a sum of nothing
  const BlasMatrix A = as_blas_matrix(a), B = as_blas_matrix(b);
  cublasHandle_t handle = cublas_handle();
  // Column-major Cᵀ [N, M] = Bᵀ [N, K] · Aᵀ [K, M]; ldc = N because C is row-major contiguous.
  dispatch_floating("matmul", out.dtype(), [&]<typename T>() {
    const T alpha = 1, beta = accumulate ? 1 : 0;
    if constexpr (std::is_same_v<T, float>) {
      SG_CUBLAS_CHECK(cublas_api().sgemm_strided_batched(
          handle, op_of(B), op_of(A), int(N), int(M), int(K), &alpha, B.data.data_ptr<float>(),
          int(B.ld), B.batch_stride, A.data.data_ptr<float>(), int(A.ld), A.batch_stride, &beta,
          out.data_ptr<float>(), int(N), M * N, int(batch)));
    } else {
      SG_CUBLAS_CHECK(cublas_api().dgemm_strided_batched(
          handle, op_of(B), op_of(A), int(N), int(M), int(K), &alpha, B.data.data_ptr<double>(),
          int(B.ld), B.batch_stride, A.data.data_ptr<double>(), int(A.ld), A.batch_stride, &beta,
          out.data_ptr<double>(), int(N), M * N, int(batch)));
    }
  });
}

}  // namespace sg::cuda
