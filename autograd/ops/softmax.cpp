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
#include "autograd/ops/internal.h"

namespace sg {

namespace {

Tensor softmax_along(std::string_view op, const Tensor& x, int64_t dim, bool log) {
  SG_CHECK(x.is_floating_point(), "{}: expected a floating point tensor, got {}", op, x.dtype());
  const int64_t d = normalize_dim(op, dim, x.dim());
  // The kernels walk a contiguous [outer, D, inner] layout, so views are copied first.
  Tensor input = x.detach().contiguous();
  Tensor out = empty(x.shape(), x.options());
  backend_for(x.device()).softmax(input, d, log, out);

  return record(std::string(op), out, {x}, [sy = SavedTensor(out), d, log](const Tensor& g) {
    const Tensor& y = sy.get();
    Tensor dx = empty(y.shape(), y.options());
    backend_for(y.device()).softmax_backward(g.contiguous(), y, d, log, dx);
    return Grads{dx};
  });
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_along("softmax", x, dim, false); }

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return softmax_along("log_softmax", x, dim, true);
}

}  // namespace sg
