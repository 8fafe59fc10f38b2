// The backward engine: walks the graph from a tensor back to the leaves, calling each node's
// backward function once all the gradient for its output has arrived.
#pragma once

#include "autograd/tensor.h"

namespace sg {

// What Tensor::backward() calls. `gradient` must have root's shape (for a scalar root it may be
// undefined, meaning 1).
void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace sg
