#include "autograd/node.h"

#include "autograd/grad_mode.h"

namespace sg {

namespace {
// Nodes waiting to be destroyed by the outermost ~Node (Note [No reference cycles]).
thread_local std::vector<std::shared_ptr<Node>>* nodes_to_free = nullptr;
}  // namespace

Node::Node(std::string name, std::vector<Edge> edges, BackwardFn backward, Shape out_shape)
    : name_(std::move(name)),
      edges_(std::move(edges)),
      backward_(std::move(backward)),
      output_shape_(std::move(out_shape)) {}

Node::~Node() {
  // A chain of 10^5 nodes would otherwise be destroyed by 10^5 nested destructor calls. Instead,
  // children that die with this node are handed to the outermost ~Node, which frees them in a loop.
  std::vector<std::shared_ptr<Node>> worklist;
  bool outermost = nodes_to_free == nullptr;
  if (outermost) nodes_to_free = &worklist;
  for (Edge& edge : edges_) {
    if (edge.node && edge.node.use_count() == 1) nodes_to_free->push_back(std::move(edge.node));
  }
  backward_ = nullptr;
  if (outermost) {
    while (!worklist.empty()) {
      std::shared_ptr<Node> next = std::move(worklist.back());
      worklist.pop_back();
      next.reset();  // its destructor appends its own children to `worklist`
    }
    nodes_to_free = nullptr;
  }
}

Grads Node::apply(const Tensor& grad_output) {
  SG_CHECK(!released_,
           "backward: the graph through '{}' was already freed by an earlier backward(); call "
           "backward(gradient, /*retain_graph=*/true) the first time to backpropagate twice",
           name_);
  if (!detail::anomaly_flag()) return backward_(grad_output);
  // Anomaly mode (autograd/anomaly.h): the ops inside a backward function are not checked one by
  // one; what it returns is, and a bad gradient is reported against this node.
  Grads grads;
  {
    detail::BackwardScope in_backward;
    grads = backward_(grad_output);
  }
  detail::check_backward(*this, grads);
  return grads;
}

void Node::release() {
  backward_ = nullptr;
  released_ = true;
}

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined() || !is_grad_enabled()) return;
  tensor_ = t.detach();
  version_ = t.version();
}

const Tensor& SavedTensor::get() const {
  SG_CHECK(!tensor_.defined() || tensor_.version() == version_,
           "a tensor of shape {} saved for backward was modified by an in-place operation "
           "(version {} at save, {} now); clone() it before changing it in place",
           tensor_.shape(), version_, tensor_.version());
  return tensor_;
}

bool needs_graph(std::initializer_list<Tensor> inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

bool needs_graph(const std::vector<Tensor>& inputs) {
  if (!is_grad_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

Tensor record(std::string name, Tensor out, const std::vector<Tensor>& inputs,
              BackwardFn backward) {
  if (!is_grad_enabled()) return out;
  bool any = false;
  std::vector<Edge> edges(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !in.requires_grad()) continue;
    any = true;
    edges[i].shape = in.shape();
    edges[i].dtype = in.dtype();
    if (in.grad_fn()) {
      edges[i].node = in.grad_fn();
    } else {
      edges[i].leaf = in.impl_ptr();
    }
  }
  if (!any) return out;
  TensorImpl* impl = out.impl();
  impl->grad_fn =
      std::make_shared<Node>(std::move(name), std::move(edges), std::move(backward), out.shape());
  if (detail::anomaly_flag() && detail::call_site() != nullptr) {
    impl->grad_fn->set_created_at(*detail::call_site());
  }
  impl->requires_grad = true;
  return out;
}

}  // namespace sg
