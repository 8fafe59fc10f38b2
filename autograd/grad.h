// sg::autograd::grad: gradients returned instead of accumulated, PyTorch's torch.autograd.grad.
//
//   auto [dx] = ...;  // C++: a vector, one gradient per input
//   std::vector<sg::Tensor> g = sg::autograd::grad({loss}, {x}, {}, std::nullopt,
//                                                  /*create_graph=*/true);
//   sg::Tensor penalty = (g[0] * g[0]).sum();   // a function of x: it can be differentiated again
//   penalty.backward();
//
// With create_graph the backward pass is itself recorded: every backward formula runs as ops with
// grad mode on, so the gradient has a graph (the graph of the gradient: draw it with to_dot) and
// Hessian-vector products, gradient penalties and MAML's inner steps are one more backward away.
// Note [Saved tensors and double backward] in autograd/node.h says how saved tensors make that
// work.
//
// Tensor::backward(gradient, retain_graph, create_graph=true) does the same into .grad(); that
// gradient's graph leads back to the leaf, which holds it: a reference cycle (as in PyTorch) until
// .grad() is reset (zero_grad, set_grad(Tensor())). grad() keeps nothing, so it has none.
#pragma once

#include <optional>
#include <vector>

#include "autograd/tensor.h"

namespace sg::autograd {

// The gradients of Σ_i outputs[i] ⊙ grad_outputs[i] with respect to each of `inputs` (tensors that
// require grad: leaves or computed). grad_outputs may be empty (every output a scalar, seeded with
// 1) or hold one tensor per output (undefined for a scalar output). .grad() is left untouched.
// retain_graph defaults to create_graph, as in PyTorch; an input the outputs do not depend on is
// an error unless allow_unused, when its gradient is an undefined tensor.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                         bool allow_unused = false);

}  // namespace sg::autograd
