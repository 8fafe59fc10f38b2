// to_dot: the autograd graph behind a tensor, as Graphviz DOT text, to look at what backward() will
// walk.
//
//   auto loss = (w * x + b).tanh().sum();
//   std::ofstream("graph.dot") << sg::to_dot(loss, {{"w", w}, {"b", b}});
//   // then: dot -Tsvg graph.dot -o graph.svg
//
// Boxes are recorded ops (Nodes) with their output shape; ellipses are the leaves whose .grad()
// receives a gradient. Arrows follow grad_fn()->edges(): from an op to the inputs it was computed
// from, the way backward() sends gradients. A node freed by an earlier backward() says "(freed)".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace sg {

// `names` labels leaves (parameters, inputs) that would otherwise all read "leaf".
std::string to_dot(const Tensor& root,
                   const std::vector<std::pair<std::string, Tensor>>& names = {});

}  // namespace sg
