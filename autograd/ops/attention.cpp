// fused_attention: scaled-dot-product attention (no dropout) as one op, where the backend has a
// kernel for it. nn::scaled_dot_product_attention (nn/attention.cpp) composes the same math from
// matmul, masked_softmax and a scale, the version chapter 8 reads, and calls this first.
//   forward   P = masked_softmax(scale · q·kᵀ), out = P·v              (P: the weights)
//   backward  dv = Pᵀ·g, dP = g·vᵀ, dS = scale · P ∘ (dP - Σ_s P ∘ dP), dq = dS·k, dk = dSᵀ·q
// The weights are an output too (MultiheadAttention returns them); a loss that uses them sends
// their gradient through dS the same way, from a node of their own.
// The output is laid out [B, T, H, Dv] and returned as its [B, H, T, Dv] view, so merging the
// heads afterwards (transpose(1, 2), reshape to [B, T, H·Dv]) is a view instead of a copy; dq,
// dk, dv likewise, the layout of the projections they flow back into.
// A backward that records a graph (create_graph) differentiates the composed forward instead
// (detail::composed_backward): the saved weights are values, not functions of q and k.
#include "autograd/ops/internal.h"

namespace sg {

namespace {

// dq, dk for a gradient dP of P = softmax(scale · q·kᵀ) (masked entries have P = 0, so dS = 0).
std::pair<Tensor, Tensor> scores_backward(const Tensor& p, const Tensor& dp, const Tensor& q,
                                          const Tensor& k, double scale) {
  const Tensor ds = p * (dp - (p * dp).sum({-1}, /*keepdim=*/true)) * scale;
  return {matmul(ds, k), matmul(ds.transpose(-2, -1), q)};
}

// The weights and the output as ops (what composed_backward differentiates).
Tensor composed_weights(const Tensor& q, const Tensor& k, const Tensor& mask, double scale) {
  const Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  return mask.defined() ? masked_softmax(scores, mask, -1) : softmax(scores, -1);
}

}  // namespace

std::pair<Tensor, Tensor> fused_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                          const Tensor& mask, double scale) {
  SG_PROFILE_OP("fused_attention");
  if (!q.defined() || !k.defined() || !v.defined() || q.dim() != 4 || k.dim() != 4 ||
      v.dim() != 4) {
    return {};
  }
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), Dh = q.size(3);
  const int64_t S = k.size(2), Dv = v.size(3);
  const Shape scores_shape{B, H, T, S};
  const bool same_heads = k.size(0) == B && k.size(1) == H && k.size(3) == Dh && v.size(0) == B &&
                          v.size(1) == H && v.size(2) == S;
  const bool same_kind = q.dtype() == k.dtype() && q.dtype() == v.dtype() &&
                         q.device() == k.device() && q.device() == v.device();
  if (!same_heads || !same_kind ||
      (mask.defined() && (mask.dtype() != kBool || mask.device() != q.device() ||
                          !broadcasts_to(mask.shape(), scores_shape)))) {
    return {};  // the composition checks and reports these
  }
  const Tensor m = mask.defined() ? detail::broadcast_view(mask.detach(), scores_shape) : Tensor();
  Tensor out = empty({B, T, H, Dv}, q.options()).transpose(1, 2);
  Tensor weights = empty(scores_shape, q.options());
  if (!backend_for(q.device())
           .attention(q.detach(), k.detach(), v.detach(), m, scale, out, weights)) {
    return {};
  }
  const Tensor p = weights.detach();  // the weights' values, without the node recorded below
  out = record(
      "fused_attention", out, {q, k, v},
      [sq = SavedTensor(q), sk = SavedTensor(k), sv = SavedTensor(v), sp = SavedTensor(p),
       sm = SavedTensor(m), scale, B, H, T, S, Dh, Dv](const Tensor& g) {
        const Tensor &q_ = sq.get(), &k_ = sk.get(), &v_ = sv.get(), &p_ = sp.get();
        if (is_grad_enabled()) {  // create_graph
          const Tensor mask_ = sm.get();
          return detail::composed_backward(
              [mask_, scale](const std::vector<Tensor>& in) {
                return matmul(composed_weights(in[0], in[1], mask_, scale), in[2]);
              },
              {q_, k_, v_}, g);
        }
        Tensor dq = empty({B, T, H, Dh}, g.options()).transpose(1, 2);
        Tensor dk = empty({B, S, H, Dh}, g.options()).transpose(1, 2);
        Tensor dv = empty({B, S, H, Dv}, g.options()).transpose(1, 2);
        if (!backend_for(g.device()).attention_backward(g, q_, k_, v_, p_, scale, dq, dk, dv)) {
          dv = matmul(p_.transpose(-2, -1), g);
          std::tie(dq, dk) = scores_backward(p_, matmul(g, v_.transpose(-2, -1)), q_, k_, scale);
        }
        return Grads{dq, dk, dv};
      });
  weights = record("fused_attention_weights", weights, {q, k},
                   [sq = SavedTensor(q), sk = SavedTensor(k), sp = SavedTensor(p),
                    sm = SavedTensor(m), scale](const Tensor& g) {
                     if (is_grad_enabled()) {  // create_graph
                       const Tensor mask_ = sm.get();
                       return detail::composed_backward(
                           [mask_, scale](const std::vector<Tensor>& in) {
                             return composed_weights(in[0], in[1], mask_, scale);
                           },
                           {sq.get(), sk.get()}, g);
                     }
                     auto [dq, dk] = scores_backward(sp.get(), g, sq.get(), sk.get(), scale);
                     return Grads{dq, dk};
                   });
  return {out, weights};
}

}  // namespace sg
