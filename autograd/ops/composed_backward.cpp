// detail::composed_backward: the gradient of a fused op recomputed through its composed forward,
// for backward passes that record a graph (create_graph). See autograd/ops/internal.h.
#include "autograd/grad.h"
#include "autograd/ops/internal.h"

namespace sg::detail {

std::vector<Tensor> composed_backward(const ComposedFn& composed, const std::vector<Tensor>& inputs,
                                      const Tensor& g) {
  std::vector<Tensor> wrt;
  for (const Tensor& x : inputs) {
    if (x.defined() && x.requires_grad()) wrt.push_back(x);
  }
  std::vector<Tensor> grads(inputs.size());
  if (wrt.empty()) return grads;
  Tensor out = composed(inputs);
  std::vector<Tensor> got = autograd::grad({out}, wrt, {g.to(out.dtype())}, /*retain_graph=*/true,
                                           /*create_graph=*/true, /*allow_unused=*/true);
  for (size_t i = 0, k = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) grads[i] = got[k++];
  }
  return grads;
}

}  // namespace sg::detail
