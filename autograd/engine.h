// The backward engine: walks the graph from tensors back to the leaves, calling each node's
// backward function once all the gradient for its output has arrived.
#pragma once

#include <vector>

#include "autograd/tensor.h"

namespace sg {

// What Tensor::backward() and sg::autograd::grad() call. gradients[i] must have roots[i]'s shape
// (for a scalar root it may be undefined, meaning 1). With create_graph the backward functions run
// with grad mode on, so the gradients have a graph of their own (Note [Saved tensors and double
// backward] in autograd/node.h). With `inputs` empty, gradients are accumulated into the leaves'
// .grad() and nothing is returned; otherwise the gradient of each input is returned (undefined for
// an unused input when allow_unused) and no .grad() is touched.
std::vector<Tensor> run_backward(const std::vector<Tensor>& roots,
                                 const std::vector<Tensor>& gradients, bool retain_graph,
                                 bool create_graph, const std::vector<Tensor>& inputs = {},
                                 bool allow_unused = false);

}  // namespace sg
