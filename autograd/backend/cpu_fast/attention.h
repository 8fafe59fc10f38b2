// The fast backend's two attention kernels (backend.h: attention, attention_backward), tried in
// this order by FastCpuBackend::attention (attention.cpp): each returns false where the shapes do
// not fit it, and when neither fits the op composes the attention from products and a masked
// softmax (scaled_dot_product_attention_composed). `bfloat16` (autocast): every operand of their
// products rounded to bfloat16 first (backend.h).
#pragma once

#include "autograd/tensor.h"

namespace sg::cpu {

// Sequences of at most 16 queries and keys, heads of at most 16, float32, in AVX-512 registers
// (short_attention.cpp).
bool short_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                     double scale, const Tensor& out, const Tensor& weights, bool bfloat16);
bool short_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                              const Tensor& weights, double scale, const Tensor& dq,
                              const Tensor& dk, const Tensor& dv, bool bfloat16);
// At most 64 keys and heads of at most 64, any number of queries, float32: each head's products
// in narrow_gemm (gemm_attention.cpp).
bool gemm_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                    double scale, const Tensor& out, const Tensor& weights, bool bfloat16);
bool gemm_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& weights, double scale, const Tensor& dq,
                             const Tensor& dk, const Tensor& dv, bool bfloat16);

}  // namespace sg::cpu
