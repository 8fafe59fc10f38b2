// attention_composed: scaled-dot-product attention from matmul, a scale, masked_softmax and
// dropout, the version to read first (nn::scaled_dot_product_attention runs it), and
// fused_attention: the same math (no dropout) as one op where the backend has a kernel for it
// (the fast CPU backend's), attention_composed where it has none. Under autocast
// (autograd/autocast.h), where each head's products are large enough, every product reads
// bfloat16-rounded operands, in the kernel (its `bfloat16`) or in the composed form's matmuls, and
// the node keeps that for its backward.
//   forward   P = masked_softmax(scale · q·kᵀ), out = P·v              (P: the weights)
//   backward  dv = Pᵀ·g, dP = g·vᵀ, dS = scale · P ∘ (dP - Σ_s P ∘ dP), dq = dS·k, dk = dSᵀ·q
// The weights are an output too (MultiheadAttention returns them); a loss that uses them sends
// their gradient through dS the same way, from a node of their own.
// The output is laid out [B, T, H, Dv] and returned as its [B, H, T, Dv] view, so merging the
// heads afterwards (transpose(1, 2), reshape to [B, T, H·Dv]) is a view instead of a copy; dq,
// dk, dv likewise, the layout of the projections they flow back into.
#include "autograd/ops/internal.h"

namespace sg {

namespace {

// dq, dk for a gradient dP of P = softmax(scale · q·kᵀ) (masked entries have P = 0, so dS = 0).
std::pair<Tensor, Tensor> scores_backward(const Tensor& p, const Tensor& dp, const Tensor& q,
                                          const Tensor& k, double scale) {
  const Tensor ds = p * (dp - (p * dp).sum({-1}, /*keepdim=*/true)) * scale;
  return {matmul(ds, k), matmul(ds.transpose(-2, -1), q)};
}

}  // namespace

std::pair<Tensor, Tensor> attention_composed(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& mask, double scale, double dropout_p,
                                             bool training, CallSite site) {
  const CallSiteScope call_site(site);
  detail::check_not_bfloat16("attention_composed", {q, k, v});
  // --8<-- [start:ex07.attention]
  // Scaling q rather than the scores: q [..., T, Dh] is no bigger than the scores [..., T, S],
  // and the product comes out contiguous, so the batched matmuls below (and their backward)
  // read q in place instead of copying the per-head view. k and v likewise, once.
  Tensor scores = matmul(q * scale, k.contiguous().transpose(-2, -1));  // [..., T, S]
  if (mask.defined()) {
    SG_CHECK(broadcasts_to(mask.shape(), scores.shape()),
             "scaled_dot_product_attention: mask of shape {} cannot be broadcast to the scores' "
             "shape {} ([..., T, S])",
             mask.shape(), scores.shape());
  }
  // Over the keys: each query's row sums to 1. masked_softmax gives blocked keys weight exactly 0
  // and a query whose keys are ALL blocked a row of zeros (so its output is 0 and no gradient
  // flows), where masking the scores with -inf would give 0/0 = NaN.
  Tensor weights = mask.defined() ? masked_softmax(scores, mask, -1) : softmax(scores, -1);
  Tensor dropped = dropout(weights, dropout_p, training);
  return {matmul(dropped, v.contiguous()), weights};
  // --8<-- [end:ex07.attention]
}

std::pair<Tensor, Tensor> fused_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                          const Tensor& mask, double scale, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("fused_attention");
  detail::check_not_bfloat16("fused_attention", {q, k, v});
  if (!q.defined() || !k.defined() || !v.defined() || q.dim() != 4 || k.dim() != 4 ||
      v.dim() != 4) {
    return attention_composed(q, k, v, mask, scale);
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
    return attention_composed(q, k, v, mask, scale);  // it checks and reports these
  }
  const Tensor m = mask.defined() ? detail::broadcast_view(mask.detach(), scores_shape) : Tensor();
  Tensor out = empty({B, T, H, Dv}, q.options()).transpose(1, 2);
  Tensor weights = empty(scores_shape, q.options());
  // Each head's two products, Q·Kᵀ and P·V: T·S·Dh and T·S·Dv multiply-adds. The kernels round
  // both or neither; where autocast's size threshold falls between the two, the composed form
  // (whose matmuls decide one by one) runs instead, as on the reference kernels.
  const bool bfloat16 = autocast_applies(q.dtype(), q.device(), static_cast<double>(T * S * Dh));
  if (bfloat16 != autocast_applies(q.dtype(), q.device(), static_cast<double>(T * S * Dv))) {
    return attention_composed(q, k, v, mask, scale);
  }
  if (!backend_for(q.device())
           .attention(q.detach(), k.detach(), v.detach(), m, scale, out, weights, bfloat16)) {
    return attention_composed(q, k, v, mask, scale);
  }
  // Two products per head, Q·Kᵀ and P·V; the backward runs four.
  const double product_flops = 2.0 * static_cast<double>(B * H * T * S * (Dh + Dv));
  profiler::count_flops(product_flops);
  const Tensor p = weights.detach();  // the weights' values, without the node recorded below
  out = record(
      "fused_attention", out, {q, k, v},
      [sq = SavedTensor(q), sk = SavedTensor(k), sv = SavedTensor(v), sp = SavedTensor(p),
       sm = SavedTensor(m), scale, B, H, T, S, Dh, Dv, product_flops, bfloat16](const Tensor& g) {
        const AutocastAsRecorded autocast(bfloat16);  // as in the forward
        const Tensor &q_ = sq.get(), &k_ = sk.get(), &v_ = sv.get(), &p_ = sp.get();
        if (is_grad_enabled()) {  // create_graph: differentiate the composition
          return detail::composed_backward(
              [mask_ = sm.get(), scale](const std::vector<Tensor>& in) {
                return attention_composed(in[0], in[1], in[2], mask_, scale).first;
              },
              {q_, k_, v_}, g);
        }
        // The kernels read each head's rows with the head dim contiguous; a gradient that is not
        // (sum()'s, expanded with stride 0) is copied into that layout first.
        const Tensor grad = g.stride(3) == 1 ? g : g.contiguous();
        Tensor dq = empty({B, T, H, Dh}, g.options()).transpose(1, 2);
        Tensor dk = empty({B, S, H, Dh}, g.options()).transpose(1, 2);
        Tensor dv = empty({B, S, H, Dv}, g.options()).transpose(1, 2);
        const bool done =
            backend_for(g.device())
                .attention_backward(grad, q_, k_, v_, p_, scale, dq, dk, dv, bfloat16);
        SG_CHECK(done, "fused_attention: the backend ran the forward but not the backward");
        profiler::count_flops(2.0 * product_flops);
        return Grads{dq, dk, dv};
      });
  weights = record(
      "fused_attention_weights", weights, {q, k},
      [sq = SavedTensor(q), sk = SavedTensor(k), sv = SavedTensor(v), sp = SavedTensor(p),
       sm = SavedTensor(m), scale, bfloat16](const Tensor& g) {
        const AutocastAsRecorded autocast(bfloat16);  // its products as in the forward
        if (is_grad_enabled()) {                      // create_graph: differentiate the composition
          return detail::composed_backward(
              [mask_ = sm.get(), v_ = sv.get().detach(), scale](const std::vector<Tensor>& in) {
                return attention_composed(in[0], in[1], v_, mask_, scale).second;
              },
              {sq.get(), sk.get()}, g);
        }
        auto [dq, dk] = scores_backward(sp.get(), g, sq.get(), sk.get(), scale);
        return Grads{dq, dk};
      });
  return {out, weights};
}

}  // namespace sg
