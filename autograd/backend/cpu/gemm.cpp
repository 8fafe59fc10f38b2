// CPU matrix multiply through OpenBLAS (with blas.cpp, the only files that include <cblas.h>).
//
// BLAS takes a matrix as a pointer, a leading dimension and a transpose flag, which is exactly a
// 2-D strided view whose last stride is 1 (row-major, "N") or whose second-to-last stride is 1
// (a transposed view, "T"). So x.transpose(-2, -1) reaches BLAS without a copy; only views that
// are neither (e.g. every other column) are copied first.
#include <cblas.h>

#include <climits>

#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/blas.h"
#include "autograd/factory.h"

namespace sg::cpu {

namespace {

struct BlasMatrix {
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 1;            // leading dimension
  int64_t batch_stride = 0;  // elements between consecutive matrices (0 = broadcast)
  Tensor data;               // the view itself, or a contiguous copy of it
};

// Describes m [batch, rows, cols] to BLAS, copying only when its strides cannot be expressed.
BlasMatrix as_blas_matrix(const Tensor& m) {
  const int64_t rows = m.size(1), cols = m.size(2);
  // A dim of size 1 is never stepped along, so its stride is free: pick one BLAS accepts.
  int64_t row_stride = rows == 1 ? std::max<int64_t>(cols, 1) : m.stride(1);
  int64_t col_stride = cols == 1 ? 1 : m.stride(2);
  if (rows == 1 && cols > 1 && col_stride != 1) row_stride = 1;  // a single strided row
  BlasMatrix out;
  out.batch_stride = m.stride(0);
  out.data = m;
  if (col_stride == 1 && row_stride >= std::max<int64_t>(cols, 1)) {
    out.trans = CblasNoTrans;
    out.ld = row_stride;
  } else if (row_stride == 1 && col_stride >= std::max<int64_t>(rows, 1)) {
    out.trans = CblasTrans;
    out.ld = col_stride;
  } else {
    out.data = empty(m.shape(), m.options());
    copy(m, out.data);
    out.trans = CblasNoTrans;
    out.ld = std::max<int64_t>(cols, 1);
    out.batch_stride = rows * cols;
  }
  return out;
}

template <typename T>
void gemm_typed(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  SG_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX,
           "matmul: sizes M={} N={} K={} exceed what BLAS can index", M, N, K);
  if (M == 0 || N == 0) return;
  if (K == 0) return fill(out, 0.0);
  BlasMatrix A = as_blas_matrix(a), B = as_blas_matrix(b);
  const T* pa = A.data.data_ptr<T>();
  const T* pb = B.data.data_ptr<T>();
  T* pc = out.data_ptr<T>();
  for (int64_t i = 0; i < batch; ++i) {
    const T* ai = pa + i * A.batch_stride;
    const T* bi = pb + i * B.batch_stride;
    T* ci = pc + i * M * N;
    if constexpr (std::is_same_v<T, float>) {
      cblas_sgemm(CblasRowMajor, A.trans, B.trans, int(M), int(N), int(K), 1.0f, ai, int(A.ld), bi,
                  int(B.ld), 0.0f, ci, int(N));
    } else {
      cblas_dgemm(CblasRowMajor, A.trans, B.trans, int(M), int(N), int(K), 1.0, ai, int(A.ld), bi,
                  int(B.ld), 0.0, ci, int(N));
    }
  }
}

}  // namespace

void gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  warn_once_if_blas_is_slow();
  dispatch_floating("matmul", out.dtype(), [&]<typename T>() { gemm_typed<T>(a, b, out); });
}

}  // namespace sg::cpu
