// Helpers shared by the files in autograd/ops/. Not part of the public API: they make views and
// conversions WITHOUT recording them in the graph, for ops that record themselves as one node
// (a broadcasting add is one "add" node, not "expand" + "expand" + "add").
#pragma once

#include <string_view>

#include "autograd/backend/backend.h"
#include "autograd/factory.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"

namespace sg::detail {

// A tensor sharing x's storage with the given geometry; no autograd history.
Tensor make_view(const Tensor& x, Shape shape, Strides strides, int64_t offset);
// x seen with `shape` by broadcasting (stride 0 on new or size-1 dims); shape must be reachable.
Tensor broadcast_view(const Tensor& x, const Shape& shape);
// x converted to dtype (x itself when it already is); no autograd history.
Tensor convert(const Tensor& x, DType dtype);
// Throws "op: tensors are on cpu and cuda:0" unless every defined tensor is on one device.
void check_same_device(std::string_view op, std::initializer_list<Tensor> tensors);
// Throws "op: expected a float32 or float64 tensor, got int64".
void check_floating(std::string_view op, const Tensor& x);

}  // namespace sg::detail
