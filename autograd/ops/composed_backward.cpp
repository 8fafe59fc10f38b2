// detail::composed_backward: the gradient of a fused op recomputed through its composed forward,
// for backward passes that record a graph (create_graph). See autograd/ops/internal.h.
#include "autograd/grad.h"
#include "autograd/ops/internal.h"

namespace sg::detail {

std::vector<Tensor> composed_backward(const ComposedFn& composed, const std::vector<Tensor>& inputs,
                                      const Tensor& g) {
  // Each input is differentiated through an alias of its own (a recorded view), so that one
  // tensor passed twice (self-attention's q = k = v) gets each position's share, not the total.
  std::vector<Tensor> aliases = inputs, wrt;
  for (Tensor& x : aliases) {
    if (!x.defined() || !x.requires_grad()) continue;
    x = x.view(x.shape());
    wrt.push_back(x);
  }
  std::vector<Tensor> grads(inputs.size());
  if (wrt.empty()) return grads;
  Tensor out = composed(aliases);
  std::vector<Tensor> got = autograd::grad({out}, wrt, {g.to(out.dtype())}, /*retain_graph=*/true,
                                           /*create_graph=*/true, /*allow_unused=*/true);
  for (size_t i = 0, k = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) grads[i] = got[k++];
  }
  return grads;
}

}  // namespace sg::detail
