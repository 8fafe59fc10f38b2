// Helpers shared by the files in autograd/ops/. Not part of the public API: they make views and
// conversions WITHOUT recording them in the graph, for ops that record themselves as one node
// (a broadcasting add is one "add" node, not "expand" + "expand" + "add").
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "autograd/autocast.h"
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
// Throws "op: expected a float32 or float64 tensor, got int64" (and refuses bfloat16: Note
// [bfloat16 is for storage] in autograd/dtype.h).
void check_floating(std::string_view op, const Tensor& x);
// Refuses bfloat16 tensors by the op's name: the ops composed of others, whose parts would
// otherwise name themselves.
void check_not_bfloat16(std::string_view op, std::initializer_list<Tensor> tensors);

// ---- backward formulas under create_graph (Note [Saved tensors and double backward], node.h) ----
// A backward that runs a raw kernel (a fused backward, an index_add) records nothing, so when grad
// mode is on in backward (create_graph) the ops compute the same gradient in one of two ways:

// 1. The kernel's result is linear in g (a scatter, an index_add: where g's entries go): it is
//    recorded as an op of its own on g, whose backward is the adjoint map (a gather, an
//    index_select). Without a graph (grad mode off, or g needs none), `result` is returned as is.
template <typename Adjoint>
Tensor linear_in_grad(std::string_view name, Tensor result, const Tensor& g, Adjoint adjoint) {
  return record(name, std::move(result), {g},
                [adjoint](const Tensor& gg) { return Grads{adjoint(gg)}; });
}

// 2. The gradient depends on what the kernel computed from the inputs (statistics, attention
//    weights): the op's composed forward is run again on the saved inputs (with their autograd
//    identity) and differentiated with create_graph, so the gradient is made of recorded ops.
//    Returns one gradient per input (undefined for those that do not require grad).
using ComposedFn = std::function<Tensor(const std::vector<Tensor>&)>;
std::vector<Tensor> composed_backward(const ComposedFn& composed, const std::vector<Tensor>& inputs,
                                      const Tensor& g);

// The op a GPU kernel of gather names in a bad-index error (Note [Index checks on the device] in
// ops/indexing.cpp): "gather", or inside this scope the op that called it, so that a loss reports
// the user's bad target as a target ("cross_entropy: target 11 is out of range for 11 classes").
class IndexErrorsNamed {
 public:
  explicit IndexErrorsNamed(std::string_view op);
  ~IndexErrorsNamed();
  IndexErrorsNamed(const IndexErrorsNamed&) = delete;
  IndexErrorsNamed& operator=(const IndexErrorsNamed&) = delete;
  static std::string_view name_or(std::string_view op);  // the scope's op, else op

 private:
  std::string_view previous_;
};

}  // namespace sg::detail
