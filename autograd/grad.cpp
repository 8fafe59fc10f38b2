#include "autograd/grad.h"

#include "autograd/engine.h"
#include "autograd/error.h"

namespace sg::autograd {

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  SG_CHECK(!outputs.empty(), "grad: expected at least one output");
  SG_CHECK(!inputs.empty(), "grad: expected at least one input to differentiate with respect to");
  SG_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(),
           "grad: got {} outputs but {} grad_outputs", outputs.size(), grad_outputs.size());
  std::vector<Tensor> seeds =
      grad_outputs.empty() ? std::vector<Tensor>(outputs.size()) : grad_outputs;
  return run_backward(outputs, seeds, retain_graph.value_or(create_graph), create_graph, inputs,
                      allow_unused);
}

}  // namespace sg::autograd
