// Backend: the contract between the math (autograd/ops) and the machine. Only backends touch raw
// memory. An op checks its inputs, allocates its output, then calls one of these kernels through
// backend_for(device), the only place in the project that switches on the device.
//
// Conventions for every kernel: shapes and dtypes were checked by the op; `out` is a fresh,
// contiguous tensor unless the comment says otherwise; inputs may have any strides (a stride of 0
// is a broadcast) unless the comment says "contiguous".
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "autograd/backend/adam_step_scalars.h"
#include "autograd/backend/kernel_names.h"
#include "autograd/cpu_kernels.h"
#include "autograd/tensor.h"

namespace sg {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // ---- memory ----
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  // Bytes the allocator keeps for reuse (a caching allocator's free blocks): used as far as the
  // system can tell, yet free for a new tensor (host_memory.h counts them as left).
  virtual size_t reusable_bytes() const { return 0; }
  virtual void copy_from_host(void* dst, const void* host_src, size_t nbytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t nbytes) = 0;

  // ---- elementwise ----
  // out (any strides) = value.
  virtual void fill(const Tensor& out, double value) = 0;
  // dst (any strides) = src, same shape, converting dtype if they differ.
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  // out = op(x); x has out's shape and dtype (LogicalNot: bool).
  virtual void unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) = 0;
  // out = op(a, b); a and b share one dtype and are expanded to out's shape; out is bool for
  // comparisons and logic, else a's dtype.
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // out = condition ? a : b; all three expanded to out's shape, a and b of out's dtype.
  virtual void where(const Tensor& condition, const Tensor& a, const Tensor& b,
                     const Tensor& out) = 0;

  // ---- random numbers ----
  // out (contiguous, float32 or float64): element i (row-major) = uniform_at(state, i + 1) of
  // autograd/generator.h, rounded to out's dtype: the numbers n = out.numel() calls of
  // Generator::next_uniform() would give from `state`, on every device.
  virtual void uniform(const Tensor& out, uint64_t state) = 0;
  // The same with `state` read from the device (int64 [1], its bits those of the uint64 state):
  // what a CUDA graph replays, the state written before each replay (cuda_graph.h). Only
  // backends that capture graphs have it.
  virtual bool uniform_from_device(const Tensor& /*out*/, const Tensor& /*state*/) { return false; }

  // ---- reductions ----
  // x is [outer..., reduced...]: its last `reduced_dims` dims are reduced into out (contiguous,
  // the outer shape); for Max/Min none of them is empty (the op checks). For Max/Min with
  // reduced_dims == 1, `indices` (int64, like out, or undefined) receives the position of the first
  // extreme value.
  virtual void reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
                      const Tensor& indices) = 0;

  // ---- linear algebra ----
  // out[i] = a[i] · b[i] for a [batch, M, K], b [batch, K, N], out [batch, M, N] (contiguous), or
  // out[i] += a[i] · b[i] when `accumulate` (BLAS's beta = 1: fused_linear adds its product onto
  // the bias). a and b may be transposed views (either of their last two strides 1) and may have
  // batch stride 0.
  virtual void gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) = 0;
  // The product of autocast (autograd/autocast.h): gemm's contract for float32 a, b and out, with
  // a and b rounded to bfloat16 first. Each product of two bfloat16 values is exact in float32 (8
  // significant bits times 8 fit in 24), so the result differs from the exact product of the
  // rounded operands only by float32 rounding of the sum, whatever order the kernel sums in.
  virtual void gemm_bfloat16(const Tensor& a, const Tensor& b, const Tensor& out,
                             bool accumulate) = 0;
  // out = x rounded to bfloat16 and kept as float32 (x float32 with any strides, out float32 of
  // x's shape with any strides): what a bfloat16 product reads; the reference converts to
  // bfloat16 and back.
  virtual void round_to_bfloat16(const Tensor& x, const Tensor& out) = 0;

  // ---- softmax ----
  // out = softmax(x) or log_softmax(x) along dim; x contiguous.
  virtual void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) = 0;
  // out = dx for dy = grad (contiguous) given y (contiguous), the forward's output.
  virtual void softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                                const Tensor& out) = 0;

  // ---- indexing (index: int64, contiguous) ----
  // A kernel that finds an index out of range reports it under `op`, the public op that called it
  // ("embedding", "cross_entropy"): the CPU throws at once, the CUDA backend at its next call.
  // out = x.index_select(dim, index); x contiguous, index 1-D.
  virtual void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
                            std::string_view op) = 0;
  // out[.., index[i], ..] += src[.., i, ..] along dim (out contiguous, src contiguous).
  virtual void index_add(const Tensor& out, int64_t dim, const Tensor& index,
                         const Tensor& src) = 0;
  // out = x.gather(dim, index); x contiguous, index and out of one shape.
  virtual void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
                      std::string_view op) = 0;
  // out[.., index[..i..], ..] += src[..i..] along dim: the backward of gather.
  virtual void scatter_add(const Tensor& out, int64_t dim, const Tensor& index,
                           const Tensor& src) = 0;

  // ---- optional fused kernels ----
  // One pass where the composed version makes several (bench/NOTES.md has the measurements).
  // A backend that does not override one returns false, and the op then computes the same result
  // from the kernels above: a new backend needs none of these to be correct.
  //
  // out = softmax along the last dim of x over the entries where mask is true, 0 elsewhere; a row
  // with no true entry is all zeros. x contiguous; mask bool, x's shape, any strides.
  virtual bool masked_softmax(const Tensor& /*x*/, const Tensor& /*mask*/, const Tensor& /*out*/) {
    return false;
  }
  // Layer normalisation of x [rows, D] (contiguous) over D: out = (x - mean) · rstd · weight +
  // bias with rstd = 1/√(var + eps), var biased; weight and bias [D] or undefined. mean and rstd
  // ([rows], x's dtype) receive the statistics that layer_norm_backward takes.
  virtual bool layer_norm(const Tensor& /*x*/, const Tensor& /*weight*/, const Tensor& /*bias*/,
                          double /*eps*/, const Tensor& /*out*/, const Tensor& /*mean*/,
                          const Tensor& /*rstd*/) {
    return false;
  }
  // dx (and dweight, dbias where defined) for out = layer_norm(x) and its gradient grad
  // (contiguous, x's shape).
  virtual bool layer_norm_backward(const Tensor& /*grad*/, const Tensor& /*x*/,
                                   const Tensor& /*mean*/, const Tensor& /*rstd*/,
                                   const Tensor& /*weight*/, const Tensor& /*dx*/,
                                   const Tensor& /*dweight*/, const Tensor& /*dbias*/) {
    return false;
  }
  // A Linear layer, out = x·Wᵀ + bias, for x [rows, in], weight [out_features, in], bias
  // [out_features] or undefined, out [rows, out_features] (contiguous); one dtype.
  virtual bool linear(const Tensor& /*x*/, const Tensor& /*weight*/, const Tensor& /*bias*/,
                      const Tensor& /*out*/) {
    return false;
  }
  // Its gradients for grad = dL/dout [rows, out_features]: dx = grad·W [rows, in], dweight =
  // gradᵀ·x [out_features, in], dbias = grad summed over rows [out_features] (contiguous), each
  // computed only where defined (x is read only for dweight, weight only for dx; either may then
  // be undefined).
  virtual bool linear_backward(const Tensor& /*grad*/, const Tensor& /*x*/,
                               const Tensor& /*weight*/, const Tensor& /*dx*/,
                               const Tensor& /*dweight*/, const Tensor& /*dbias*/) {
    return false;
  }
  // Attention, out = softmax(scale · q·kᵀ over the keys where mask is true)·v, for q [B, H, T,
  // Dh], k [B, H, S, Dh], v [B, H, S, Dv], mask bool [B, H, T, S] (any strides, 0 where
  // broadcast) or undefined, out [B, H, T, Dv] (any strides); weights [B, H, T, S] (contiguous)
  // receives the softmax. A query with no key kept gets weights 0 (masked_softmax's rule).
  // `bfloat16` (autocast): every operand of the two products is rounded to bfloat16 first (q, k,
  // v, and the weights before P·v), as attention_composed's matmuls under autocast would; the
  // sums stay float32, and the weights returned are not rounded.
  virtual bool attention(const Tensor& /*q*/, const Tensor& /*k*/, const Tensor& /*v*/,
                         const Tensor& /*mask*/, double /*scale*/, const Tensor& /*out*/,
                         const Tensor& /*weights*/, bool /*bfloat16*/) {
    return false;
  }
  // Its gradients dq, dk, dv (shaped like q, k, v, any strides) for grad = dL/dout, given the
  // forward's weights; with `bfloat16`, the operands of its four products (grad, q, k, v, the
  // weights, dS) are rounded to bfloat16 first.
  virtual bool attention_backward(const Tensor& /*grad*/, const Tensor& /*q*/, const Tensor& /*k*/,
                                  const Tensor& /*v*/, const Tensor& /*weights*/, double /*scale*/,
                                  const Tensor& /*dq*/, const Tensor& /*dk*/, const Tensor& /*dv*/,
                                  bool /*bfloat16*/) {
    return false;
  }
  // Cross-entropy over rows: for logits [N, C] and targets [N] (int64, every one in [0, C) or
  // ignore_index: the op has checked them; both contiguous), log_probs [N, C] = log_softmax and
  // row_loss[i] = (1 - ε)(-log_probs[i, t_i]) - ε Σ_c log_probs[i, c] / C, 0 where t_i is
  // ignore_index (ε = label_smoothing).
  virtual bool cross_entropy(const Tensor& /*logits*/, const Tensor& /*target*/,
                             int64_t /*ignore_index*/, double /*label_smoothing*/,
                             const Tensor& /*log_probs*/, const Tensor& /*row_loss*/) {
    return false;
  }
  // Its gradient dx [N, C] (contiguous) = s_i (exp(log_probs[i, c]) - ε/C - (1 - ε)[c == t_i]),
  // s_i = grad[i] / divisor (grad [N]) or grad[0] / divisor (one element), 0 in ignored rows.
  virtual bool cross_entropy_backward(const Tensor& /*log_probs*/, const Tensor& /*target*/,
                                      const Tensor& /*grad*/, double /*divisor*/,
                                      int64_t /*ignore_index*/, double /*label_smoothing*/,
                                      const Tensor& /*dx*/) {
    return false;
  }
  // One Adam step in place on param, exp_avg and exp_avg_sq (contiguous, one shape and dtype) from
  // grad (contiguous, same shape): the update of sg::adam_update_ (ops.h), whose arguments these
  // are. `step` counts from 1.
  virtual bool adam_update(const Tensor& /*param*/, const Tensor& /*grad*/,
                           const Tensor& /*exp_avg*/, const Tensor& /*exp_avg_sq*/, double /*lr*/,
                           double /*beta1*/, double /*beta2*/, double /*eps*/,
                           double /*weight_decay*/, bool /*decoupled_weight_decay*/,
                           int64_t /*step*/) {
    return false;
  }
  // One Adam step on several parameters at once (sg::adam_update_foreach_): each entry's param,
  // grad, exp_avg and exp_avg_sq contiguous, of one shape and dtype, with its own step's scalars
  // (or, where step_scalars is defined, those read from the device, as adam_update_from_device
  // reads them: a CUDA graph's step); one device for all. A kernel makes one pass over all of
  // them, with the same bits as adam_update on each.
  struct AdamTensors {
    Tensor param, grad, exp_avg, exp_avg_sq;
    AdamStepScalars scalars;
    Tensor step_scalars;  // float64 [3] on the device, or undefined
  };
  virtual bool adam_update_foreach(const std::vector<AdamTensors>& /*parameters*/, double /*beta1*/,
                                   double /*beta2*/, double /*eps*/, double /*weight_decay*/,
                                   bool /*decoupled_weight_decay*/) {
    return false;
  }
  // The same with what changes between steps read from the device: step_scalars (float64 [3],
  // AdamStepScalars of adam_step_scalars.h, written before each replay of a CUDA graph).
  virtual bool adam_update_from_device(const Tensor& /*param*/, const Tensor& /*grad*/,
                                       const Tensor& /*exp_avg*/, const Tensor& /*exp_avg_sq*/,
                                       const Tensor& /*step_scalars*/, double /*beta1*/,
                                       double /*beta2*/, double /*eps*/, double /*weight_decay*/,
                                       bool /*decoupled_weight_decay*/) {
    return false;
  }
};

// The backend that owns memory on `device`: for the CPU, the one cpu_kernels() names. Throws a
// clear error for a device this build or this machine cannot use (e.g. "scratchgrad was built
// without CUDA").
Backend& backend_for(Device device);

// One CPU backend whatever cpu_kernels() says: tests comparing the two, and a fast kernel's own
// tests, name theirs.
Backend& cpu_backend(CpuKernels kernels);

}  // namespace sg
