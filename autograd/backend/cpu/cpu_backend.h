// The CPU backend: the reference implementation of every kernel (OpenBLAS for gemm). The kernels
// live one family per file (elementwise.cpp, reduce.cpp, gemm.cpp, softmax.cpp, indexing.cpp,
// and the fused layer_norm.cpp and adam.cpp),
// named like their CUDA twins in backend/cuda/.
#pragma once

#include "autograd/backend/backend.h"

namespace sg {

Backend& cpu_backend();

namespace cpu {
// Frees the blocks the CPU allocator keeps for reuse (backend/cpu/cpu_backend.cpp).
void release_cached_memory();
struct MemoryStats {
  size_t live_bytes, peak_live_bytes, cached_bytes;  // tensors' memory now, at most, kept for reuse
};
MemoryStats memory_stats();

void fill(const Tensor& out, double value);
void copy(const Tensor& src, const Tensor& dst);
void unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void where(const Tensor& condition, const Tensor& a, const Tensor& b, const Tensor& out);
void uniform(const Tensor& out, uint64_t state);
void reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
            const Tensor& indices);
void gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate);
void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out);
void softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                      const Tensor& out);
void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
                  std::string_view op);
void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);
void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
            std::string_view op);
void scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);
// The optional fused kernels of backend.h (softmax.cpp, layer_norm.cpp, linear.cpp,
// short_attention.cpp, gemm_attention.cpp, cross_entropy.cpp, adam.cpp).
void masked_softmax(const Tensor& x, const Tensor& mask, const Tensor& out);
void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                const Tensor& out, const Tensor& mean, const Tensor& rstd);
void layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                         const Tensor& rstd, const Tensor& weight, const Tensor& dx,
                         const Tensor& dweight, const Tensor& dbias);
// Linear layers of d_model <= 64 in narrow_gemm (linear.cpp); false where they do not fit.
bool linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out);
bool linear_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& dx,
                     const Tensor& dweight, const Tensor& dbias);
// Cross-entropy over float rows (cross_entropy.cpp); false where they do not fit.
bool cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                   double label_smoothing, const Tensor& log_probs, const Tensor& row_loss);
bool cross_entropy_backward(const Tensor& log_probs, const Tensor& target, const Tensor& grad,
                            double divisor, int64_t ignore_index, double label_smoothing,
                            const Tensor& dx);
// Attention over sequences of at most 16 (short_attention.cpp); false where it does not fit.
bool attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
               const Tensor& out, const Tensor& weights);
bool attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& weights, double scale, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv);
// Attention over at most 64 keys with heads of at most 64, any number of queries, each head's
// products in narrow_gemm (gemm_attention.cpp); false where it does not fit.
bool gemm_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                    double scale, const Tensor& out, const Tensor& weights);
bool gemm_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& weights, double scale, const Tensor& dq,
                             const Tensor& dk, const Tensor& dv);
void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, double lr, double beta1, double beta2, double eps,
                 double weight_decay, bool decoupled_weight_decay, int64_t step);
}  // namespace cpu

}  // namespace sg
