// The fast CPU backend: the reference backend (backend/cpu/) with the kernels it speeds up
// overridden, each in one shape: if the shapes fit, the fast kernel; otherwise the reference
// (CpuBackend::...), or for an optional fused kernel `return false`, so that the op runs its
// composed version. docs/design.md ("Two CPU backends") gives the rule for where a kernel goes.
//
// What it adds: a thread pool (parallel.h) under the elementwise kernels, softmax, layer norm and
// small products; a caching allocator (caching_allocator.h); small and narrow matrix products
// (tiny_gemm.h, narrow_gemm.h) with packing (transpose.h) and split products (gemm.cpp); float
// rows in AVX-512 registers (short_softmax.h, short_layer_norm.h, avx512_rows.h); and the fused
// kernels of backend.h: masked softmax, layer norm, Linear, attention, cross-entropy, Adam.
#pragma once

#include "autograd/backend/cpu/cpu_backend.h"

namespace sg::cpu {

class FastCpuBackend : public CpuBackend {
 public:
  void* allocate(size_t nbytes) override;              // caching_allocator.cpp
  void deallocate(void* ptr, size_t nbytes) override;  // caching_allocator.cpp
  size_t reusable_bytes() const override;              // caching_allocator.cpp

  // elementwise.cpp: blocks of rows over the thread pool, each block the reference's loop.
  void fill(const Tensor& out, double value) override;
  void copy(const Tensor& src, const Tensor& dst) override;
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) override;
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void where(const Tensor& condition, const Tensor& a, const Tensor& b, const Tensor& out) override;
  void uniform(const Tensor& out, uint64_t state) override;
  void reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
              const Tensor& indices) override;  // reduce.cpp
  void gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) override;
  // gemm.cpp, with bf16_gemm.h: AVX512-BF16 products where the CPU has them.
  void gemm_bfloat16(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) override;
  // elementwise.cpp: 16 floats at a time in AVX-512 registers.
  void round_to_bfloat16(const Tensor& x, const Tensor& out) override;
  // softmax.cpp
  void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) override;
  void softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                        const Tensor& out) override;
  bool masked_softmax(const Tensor& x, const Tensor& mask, const Tensor& out) override;
  // layer_norm.cpp
  bool layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                  const Tensor& out, const Tensor& mean, const Tensor& rstd) override;
  bool layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                           const Tensor& rstd, const Tensor& weight, const Tensor& dx,
                           const Tensor& dweight, const Tensor& dbias) override;
  // linear.cpp: Linear layers of up to 64 features in narrow_gemm.
  bool linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Tensor& out) override;
  bool linear_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& dx,
                       const Tensor& dweight, const Tensor& dbias) override;
  // attention.cpp: short sequences in registers (short_attention.cpp), up to 64 keys with
  // narrow_gemm (gemm_attention.cpp).
  bool attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 double scale, const Tensor& out, const Tensor& weights, bool bfloat16) override;
  bool attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& weights, double scale, const Tensor& dq, const Tensor& dk,
                          const Tensor& dv, bool bfloat16) override;
  // cross_entropy.cpp: float rows.
  bool cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                     double label_smoothing, const Tensor& log_probs,
                     const Tensor& row_loss) override;
  bool cross_entropy_backward(const Tensor& log_probs, const Tensor& target, const Tensor& grad,
                              double divisor, int64_t ignore_index, double label_smoothing,
                              const Tensor& dx) override;
  bool adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                   const Tensor& exp_avg_sq, double lr, double beta1, double beta2, double eps,
                   double weight_decay, bool decoupled_weight_decay,
                   int64_t step) override;  // adam.cpp
  bool adam_update_foreach(const std::vector<AdamTensors>& parameters, double beta1, double beta2,
                           double eps, double weight_decay,
                           bool decoupled_weight_decay) override;  // adam.cpp
};

}  // namespace sg::cpu
