// CPU matrix multiply: one BLAS call per product of the batch (with blas.cpp, the only files of
// this backend that include the BLAS, through blas_library.h). Each operand is described to BLAS as
// a pointer, a leading dimension and a transpose flag (blas_matrix.h), so transposed views need no
// copy. The bfloat16 product of autocast rounds its operands and calls the float32 one.

#include <climits>

#include "autograd/backend/blas_matrix.h"
#include "autograd/backend/cpu/blas_library.h"
#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/blas.h"
#include "autograd/factory.h"

namespace sg::cpu {

namespace {

// m [batch, rows, cols] as a float32 copy whose values are bfloat16 values. A matrix repeated over
// the batch is rounded once.
Tensor bfloat16_values(Backend& backend, const Tensor& m) {
  const Tensor source = repeats_one_matrix(m) ? with_batch(m, 1) : m;
  // Laid out as the source where it is dense (a transposed weight stays transposed), so that the
  // rounding walks both in memory order.
  Tensor values = is_non_overlapping_and_dense(source.shape(), source.strides())
                      ? empty_strided(source.shape(), source.strides(), m.options())
                      : empty(source.shape(), m.options());
  backend.round_to_bfloat16(source, values);
  return repeats_one_matrix(m) ? with_batch(values, m.size(0)) : values;
}

// c = a·b + beta·c for one product of the batch, row-major.
template <typename T>
void blas_gemm(const BlasMatrix& A, const BlasMatrix& B, int64_t M, int64_t N, int64_t K,
               const T* a, const T* b, T beta, T* c) {
  const CBLAS_TRANSPOSE ta = A.transposed ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = B.transposed ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), 1.0f, a, int(A.ld), b, int(B.ld),
                beta, c, int(N));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), 1.0, a, int(A.ld), b, int(B.ld),
                beta, c, int(N));
  }
}

}  // namespace

void CpuBackend::gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  choose_fast_blas_once();
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  SG_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX,
           "matmul: sizes M={} N={} K={} exceed what BLAS can index", M, N, K);
  if (M == 0 || N == 0) return;
  if (K == 0) {  // a sum of nothing
    if (!accumulate) fill(out, 0.0);
    return;
  }
  const BlasMatrix A = as_blas_matrix(a), B = as_blas_matrix(b);
  dispatch_floating("matmul", out.dtype(), [&]<typename T>() {
    const T* pa = A.data.data_ptr<T>();
    const T* pb = B.data.data_ptr<T>();
    T* pc = out.data_ptr<T>();
    for (int64_t i = 0; i < batch; ++i) {
      blas_gemm<T>(A, B, M, N, K, pa + i * A.batch_stride, pb + i * B.batch_stride,
                   accumulate ? T(1) : T(0), pc + i * M * N);
    }
  });
}

void CpuBackend::gemm_bfloat16(const Tensor& a, const Tensor& b, const Tensor& out,
                               bool accumulate) {
  SG_CHECK(a.dtype() == kFloat32 && b.dtype() == kFloat32 && out.dtype() == kFloat32,
           "matmul: bfloat16 products take float32 operands, got {} and {}", a.dtype(), b.dtype());
  // --8<-- [start:gemm_bfloat16]
  // What a bfloat16 product means: each operand rounded to bfloat16, the products of the rounded
  // values (exact in float32) summed in float32. So: round both, then the float32 product.
  gemm(bfloat16_values(*this, a), bfloat16_values(*this, b), out, accumulate);
  // --8<-- [end:gemm_bfloat16]
}

}  // namespace sg::cpu
