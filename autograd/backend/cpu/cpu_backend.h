// The CPU backend: the reference implementation of every kernel (OpenBLAS for gemm). The kernels
// live one family per file (elementwise.cpp, reduce.cpp, gemm.cpp, softmax.cpp, indexing.cpp),
// named like their CUDA twins in backend/cuda/.
#pragma once

#include "autograd/backend/backend.h"

namespace sg {

Backend& cpu_backend();

namespace cpu {
void fill(const Tensor& out, double value);
void copy(const Tensor& src, const Tensor& dst);
void unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void where(const Tensor& condition, const Tensor& a, const Tensor& b, const Tensor& out);
void reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
            const Tensor& indices);
void gemm(const Tensor& a, const Tensor& b, const Tensor& out);
void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out);
void softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                      const Tensor& out);
void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out);
void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);
void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out);
void scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);
}  // namespace cpu

}  // namespace sg
