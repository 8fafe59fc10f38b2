// Node: one recorded operation in the autograd graph.
//
// Each op that runs while grad mode is on and has an input that requires grad creates a Node for
// its output. The node keeps one Edge per input (where that input's gradient must go) and a
// backward function that maps the gradient of the output to the gradients of the inputs:
//
//   // d(a*b)/da = b, d(a*b)/db = a
//   return record("mul", out, {a, b}, [sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g) {
//     return Grads{g * sb.get(), g * sa.get()};
//   });
//
// A backward function returns gradients shaped like the OUTPUT where broadcasting was involved;
// the engine sums them down to each input's shape (sum_to), once, for every op.
//
// Note [Version counter]: SavedTensor remembers the storage version at save time. If the tensor is
// written in place before backward runs, the saved values are no longer those the forward used,
// and get() throws instead of returning a silently wrong gradient.
//
// Note [Saved tensors and double backward]: with create_graph (autograd/grad.h) the backward
// functions run with grad mode ON, so the ops they call record a graph of the gradient, which can
// be differentiated again. For that, a saved tensor must come back with its autograd identity, as
// PyTorch's SavedVariable does:
//   - an INPUT of the op (it requires grad when saved) is kept as the very tensor: its grad_fn or,
//     for a leaf, the leaf itself, so d(g * b)/db reaches b. It cannot be this node's output, so no
//     cycle: it points at nodes that the edges point at anyway.
//   - the node's own OUTPUT (SavedTensor::output(y): exp, tanh, softmax save y) is kept detached:
//     saved with its grad_fn, the node would own itself and never be freed. While that node runs
//     its backward with grad mode on, get() reattaches it: an alias of y whose grad_fn is the node
//     being applied (Node::apply tells it which), as PyTorch's weak grad_fn reference does.
//   - anything else (indices, statistics a fused kernel computed, a tensor that needs no grad) is
//     kept detached and is a constant in the graph of the gradient; ops that save such tensors
//     compute their gradient differently when grad mode is on (see "composed_backward" in
//     autograd/ops/internal.h).
// With grad mode off in backward (the default), get() returns the saved tensor as before and the
// backward records nothing: the default path saves no more than it did (an input that requires
// grad is no longer copied into a detached alias, so it saves one allocation).
//
// Note [No reference cycles]: a node never owns a node that owns it: a saved output is detached,
// a saved input points only at earlier nodes. Graphs are freed as soon as the last tensor
// referring to them goes away, and ~Node frees long chains iteratively (no stack overflow).
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/anomaly.h"
#include "autograd/call_site.h"
#include "autograd/tensor.h"

namespace sg {

using Grads = std::vector<Tensor>;  // one gradient per input; undefined where there is none
using BackwardFn = std::function<Grads(const Tensor& grad_output)>;

// Where the gradient for one input goes: into the node that computed it, or, for a leaf that
// requires grad, into the leaf's .grad(). Both empty for an input that needs no gradient.
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<TensorImpl> leaf;
  Shape shape;  // the input's shape, for summing broadcast gradients back down
  DType dtype = kFloat32;
  bool needs_grad() const { return node != nullptr || leaf != nullptr; }
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node(std::string name, std::vector<Edge> edges, BackwardFn backward, Shape out_shape);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& name() const { return name_; }
  const std::vector<Edge>& edges() const { return edges_; }
  const Shape& output_shape() const { return output_shape_; }

  // Runs the backward function. Throws if the graph was already freed. While it runs, the
  // node is the one whose saved outputs get() reattaches (Note [Saved tensors and double
  // backward]).
  Grads apply(const Tensor& grad_output);
  // The node whose backward function is running on this thread, or null.
  static Node* running();
  // Drops the backward function and everything it saved (after backward without retain_graph).
  void release();
  bool released() const { return released_; }
  // Where user code called the op that recorded this node; known only in anomaly mode.
  const CallSite& created_at() const { return created_at_; }
  void set_created_at(const CallSite& site) { created_at_ = site; }

 private:
  std::string name_;
  std::vector<Edge> edges_;
  BackwardFn backward_;
  Shape output_shape_;
  bool released_ = false;
  CallSite created_at_ = CallSite::unknown();
};

// A tensor saved for backward, with the version it had (Note [Version counter]) and, for an input,
// its autograd identity (Note [Saved tensors and double backward]). With grad mode off no node can
// be recorded, so it saves nothing (an op's backward lambda, built either way, is then thrown away:
// saving would only cost an allocation per op).
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t) : SavedTensor(t, /*is_output=*/false) {}
  // The output of the op that saves it: kept without its grad_fn, reattached on get().
  static SavedTensor output(const Tensor& y) { return SavedTensor(y, /*is_output=*/true); }
  // The saved tensor; throws if it was modified in place since. For a saved output read while
  // its node runs a backward with grad mode on, an alias whose grad_fn is that node.
  Tensor get() const;

 private:
  SavedTensor(const Tensor& t, bool is_output);
  Tensor tensor_;
  int64_t version_ = 0;
  bool is_output_ = false;
};

// True when an op with these inputs must record a node (grad mode on and an input requires grad).
bool needs_graph(std::initializer_list<Tensor> inputs);
bool needs_graph(const std::vector<Tensor>& inputs);

// Attaches a node for `out` if needs_graph(inputs); returns `out` either way. `inputs` may hold
// undefined tensors (optional operands); they get empty edges.
Tensor record(std::string name, Tensor out, const std::vector<Tensor>& inputs, BackwardFn backward);

// The same for a backward lambda, which ops and custom functions pass: a template, so that when no
// graph is recorded (inference, NoGradGuard, optimizer steps, backward functions themselves) the
// lambda is never turned into a std::function, which allocates, on every op call.
template <typename F>
Tensor record(std::string_view name, Tensor out, std::initializer_list<Tensor> inputs, F&& backward,
              CallSite site = CallSite::current()) {
  const CallSiteScope call_site(site);  // a custom function's caller (an op's is already set)
  if (detail::anomaly_flag()) detail::check_forward(name, out, std::vector<Tensor>(inputs));
  if (!needs_graph(inputs)) return out;
  return record(std::string(name), std::move(out), std::vector<Tensor>(inputs),
                BackwardFn(std::forward<F>(backward)));
}
template <typename F>
Tensor record(std::string_view name, Tensor out, const std::vector<Tensor>& inputs, F&& backward,
              CallSite site = CallSite::current()) {
  const CallSiteScope call_site(site);
  if (detail::anomaly_flag()) detail::check_forward(name, out, inputs);
  if (!needs_graph(inputs)) return out;
  return record(std::string(name), std::move(out), inputs, BackwardFn(std::forward<F>(backward)));
}

}  // namespace sg
