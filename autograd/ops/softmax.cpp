// softmax and log_softmax along one dim.
//
//   softmax(x)_i     = exp(x_i - m) / Σ_j exp(x_j - m)      with m = max_j x_j
//   log_softmax(x)_i = x_i - m - log Σ_j exp(x_j - m)
//
// Subtracting the max changes nothing mathematically (it cancels) but keeps exp() from
// overflowing: logits of 1000 would otherwise give inf / inf = NaN. A row that is entirely -inf
// (every position masked out) has no max to subtract and gives NaN, exactly as in PyTorch.
//
// These are fused kernels rather than compositions of exp, sum and div: the attention in a
// Transformer calls softmax on its largest tensor, and one pass that keeps y for backward beats
// four ops that each allocate. Backward needs only y:
//   softmax:      dx = y ⊙ (g - Σ g⊙y)
//   log_softmax:  dx = g - exp(y) Σ g
// In a backward that records a graph (create_graph) these formulas run as ops instead of the
// backward kernel, y being the saved output reattached to its node, so they differentiate again.
#include <limits>

#include "autograd/ops/internal.h"

namespace sg {

namespace {

// The backward formulas above as recorded ops (create_graph).
Tensor composed_softmax_backward(const Tensor& g, const Tensor& y, int64_t d, bool log) {
  if (log) return g - exp(y) * g.sum({d}, /*keepdim=*/true);
  return y * (g - (g * y).sum({d}, /*keepdim=*/true));
}

Tensor softmax_along(std::string_view op, const Tensor& x, int64_t dim, bool log) {
  SG_CHECK(x.is_floating_point(), "{}: expected a floating point tensor, got {}", op, x.dtype());
  const int64_t d = normalize_dim(op, dim, x.dim());
  // The kernels walk a contiguous [outer, D, inner] layout, so views are copied first.
  Tensor input = x.detach().contiguous();
  Tensor out = empty(x.shape(), x.options());
  backend_for(x.device()).softmax(input, d, log, out);

  return record(op, out, {x}, [sy = SavedTensor::output(out), d, log](const Tensor& g) {
    const Tensor& y = sy.get();
    if (is_grad_enabled()) return Grads{composed_softmax_backward(g, y, d, log)};
    Tensor dx = empty(y.shape(), y.options());
    backend_for(y.device()).softmax_backward(g.contiguous(), y, d, log, dx);
    return Grads{dx};
  });
}

}  // namespace

// ---- masked_softmax ----
// softmax restricted to the entries where mask is true: y = exp(x - m) / Σ_kept exp(x - m) there,
// 0 elsewhere, and a row with nothing kept is all zeros (not NaN). This is the attention softmax:
// scores masked to -inf, softmaxed, and the fully masked rows zeroed, in one pass instead of three
// (backends without the fused kernel run exactly those three steps).
// Backward: masked entries have y = 0, so softmax's dx = y ⊙ (g - Σ g⊙y) is already 0 there; no
// separate masking pass is needed.
Tensor masked_softmax(const Tensor& x, const Tensor& mask, int64_t dim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("masked_softmax");
  detail::check_not_bfloat16("masked_softmax", {x});
  SG_CHECK(x.is_floating_point(), "masked_softmax: expected a floating point tensor, got {}",
           x.dtype());
  SG_CHECK(mask.dtype() == kBool, "masked_softmax: mask must be a bool tensor, got {}",
           mask.dtype());
  SG_CHECK(broadcast_shapes("masked_softmax", mask.shape(), x.shape()) == x.shape(),
           "masked_softmax: mask of shape {} cannot be broadcast to the input's shape {}",
           mask.shape(), x.shape());
  detail::check_same_device("masked_softmax", {x, mask});
  const int64_t d = normalize_dim("masked_softmax", dim, x.dim());
  Backend& backend = backend_for(x.device());
  Tensor out = empty(x.shape(), x.options());
  const bool last = x.dim() == 0 || d == x.dim() - 1;
  if (!last || !backend.masked_softmax(x.detach().contiguous(),
                                       detail::broadcast_view(mask, x.shape()), out)) {
    NoGradGuard no_grad;
    // A -inf score takes no part either (its weight is 0 anyway), so that a row whose kept scores
    // are all -inf is a row with nothing kept. The rest becomes the most negative float rather
    // than -inf, so that a row with nothing kept is a uniform row (then zeroed), not NaN.
    const double lowest = std::numeric_limits<float>::lowest();
    const Tensor keep = logical_and(mask, x.detach().ne(-std::numeric_limits<double>::infinity()));
    Tensor kept = where(keep, x.detach(), full({}, lowest, x.options()));
    out = where(keep, softmax(kept, d), zeros({}, x.options()));
  }
  return record("masked_softmax", out, {x, mask},
                [sy = SavedTensor::output(out), d](const Tensor& g) {
                  const Tensor& y = sy.get();
                  if (is_grad_enabled())
                    return Grads{composed_softmax_backward(g, y, d, false), Tensor()};
                  Tensor dx = empty(y.shape(), y.options());
                  backend_for(y.device()).softmax_backward(g.contiguous(), y, d, /*log=*/false, dx);
                  return Grads{dx, Tensor()};
                });
}

Tensor softmax(const Tensor& x, int64_t dim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("softmax");
  return softmax_along("softmax", x, dim, false);
}

Tensor log_softmax(const Tensor& x, int64_t dim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("log_softmax");
  return softmax_along("log_softmax", x, dim, true);
}

}  // namespace sg
