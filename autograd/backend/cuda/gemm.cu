// CUDA matrix multiply through cuBLAS (the only file that calls it). The CUDA twin of
// cpu/gemm.cpp, with one more twist: cuBLAS is column-major.
//
// A row-major matrix read as column-major is its transpose. So for row-major C = A·B we ask
// cuBLAS for the column-major product Cᵀ = Bᵀ·Aᵀ: the same call with A and B swapped (and M and
// N), and C comes out row-major without any copy. Transposed views are expressed by strides as
// on the CPU, by the same as_blas_matrix (a row-major "N" operand or a transposed "T" one), and a
// batch stride of 0 repeats one matrix for the whole batch; all batches go in one strided-batched
// call. Autocast's products (gemm_bfloat16) convert their float32 operands to bfloat16 copies on
// the device and call cublasGemmStridedBatchedEx with bfloat16 inputs, float32 output and float32
// compute: tensor cores on Ampere and later. float32 products use TF32 tensor cores only when
// set_allow_tf32(true) asks for them (PyTorch's allow_tf32, off by default).
#include <climits>

#include "autograd/backend/blas_matrix.h"
#include "autograd/backend/cuda/bfloat16_support.h"
#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/cuda_graph.h"
#include "autograd/factory.h"

namespace sg::cuda {

namespace {

// An operand as cuBLAS takes it: BLAS's description (blas_matrix.h) as a cuBLAS operation.
cublasOperation_t op_of(const BlasMatrix& m) { return m.transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

// m [batch, rows, cols] (float32) as a bfloat16 copy on the device, in m's orientation (a
// transposed view is copied transposed, so the conversion reads and writes memory in order). A
// matrix repeated over the batch is converted once.
Tensor bfloat16_copy(Backend& backend, const Tensor& m) {
  const Tensor source = repeats_one_matrix(m) ? with_batch(m, 1) : m;
  const int64_t batch = source.size(0), rows = source.size(1), cols = source.size(2);
  const TensorOptions options = TensorOptions(kBFloat16).device(m.device());
  const bool transposed = rows > 1 && cols > 1 && source.stride(1) == 1;
  const Tensor copy = transposed ? empty({batch, cols, rows}, options).transpose(1, 2)
                                 : empty({batch, rows, cols}, options);
  backend.copy(source, copy);
  return repeats_one_matrix(m) ? with_batch(copy, m.size(0)) : copy;
}

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
  // TF32 tensor cores for float32 only when asked (cuda_graph.h's set_allow_tf32): exact float32
  // otherwise, as on the CPU.
  SG_CUBLAS_CHECK(cublas_api().set_math_mode(handle, out.dtype() == kFloat32 && allow_tf32()
                                                         ? CUBLAS_TF32_TENSOR_OP_MATH
                                                         : CUBLAS_DEFAULT_MATH));
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

void CudaBackend::gemm_bfloat16(const Tensor& a, const Tensor& b, const Tensor& out,
                                bool accumulate) {
  Scope scope(*this);
  const std::string unsupported = bfloat16_products_unsupported_reason(name_, compute_capability_);
  SG_CHECK(unsupported.empty(), "matmul: {}", unsupported);
  SG_CHECK(a.dtype() == kFloat32 && b.dtype() == kFloat32 && out.dtype() == kFloat32,
           "matmul: bfloat16 products take float32 operands, got {} and {}", a.dtype(), b.dtype());
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  SG_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX && batch <= INT_MAX,
           "matmul: sizes M={} N={} K={} (batch {}) exceed what cuBLAS can index", M, N, K, batch);
  if (batch == 0 || M == 0 || N == 0) return;
  if (K == 0) return accumulate ? void() : fill(out, 0.0);  // a sum of nothing
  const BlasMatrix A = as_blas_matrix(bfloat16_copy(*this, a));
  const BlasMatrix B = as_blas_matrix(bfloat16_copy(*this, b));
  const float alpha = 1, beta = accumulate ? 1 : 0;
  // Column-major Cᵀ [N, M] = Bᵀ [N, K] · Aᵀ [K, M], as in gemm above; bfloat16 in, float32 out,
  // products and sums in float32.
  SG_CUBLAS_CHECK(cublas_api().gemm_strided_batched_ex(
      cublas_handle(), op_of(B), op_of(A), int(N), int(M), int(K), &alpha, B.data.raw_data(),
      CUDA_R_16BF, int(B.ld), B.batch_stride, A.data.raw_data(), CUDA_R_16BF, int(A.ld),
      A.batch_stride, &beta, out.raw_data(), CUDA_R_32F, int(N), M * N, int(batch),
      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace sg::cuda
