// FastCpuBackend's attention: short sequences in registers; else, up to 64 keys, one head's
// products at a time; else false, and the op composes it (attention.h).
#include "autograd/backend/cpu_fast/attention.h"

#include "autograd/backend/cpu_fast/attention_heads.h"

#include "autograd/backend/cpu_fast/fast_cpu_backend.h"

namespace sg::cpu {

bool FastCpuBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v,
                               const Tensor& mask, double scale, const Tensor& out,
                               const Tensor& weights, bool bfloat16) {
  return short_attention(q, k, v, mask, scale, out, weights, bfloat16) ||
         gemm_attention(q, k, v, mask, scale, out, weights, bfloat16);
}

bool FastCpuBackend::attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                        const Tensor& v, const Tensor& weights, double scale,
                                        const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                        bool bfloat16) {
  // The forwards also take keys by columns (a decoding cache's); the backwards read them in rows.
  const Tensor k_rows = keys_by_columns(k) ? k.contiguous() : k;
  return short_attention_backward(grad, q, k_rows, v, weights, scale, dq, dk, dv, bfloat16) ||
         gemm_attention_backward(grad, q, k_rows, v, weights, scale, dq, dk, dv, bfloat16);
}

}  // namespace sg::cpu
