#include "autograd/node.h"

#include "autograd/grad_mode.h"

namespace sg {

namespace {
// Nodes waiting to be destroyed by the outermost ~Node (Note [No reference cycles]).
thread_local std::vector<std::shared_ptr<Node>>* nodes_to_free = nullptr;
// The node whose backward function is running (Node::apply), for SavedTensor::get().
thread_local Node* running_node = nullptr;
}  // namespace

Node::Node(std::string name, std::vector<Edge> edges, BackwardFn backward, Shape out_shape)
    : name_(std::move(name)),
      edges_(std::move(edges)),
      backward_(std::move(backward)),
      output_shape_(std::move(out_shape)) {}

// GCC 14 warns that ~Node stores the address of its local worklist in nodes_to_free; it is reset
// to null before the worklist goes out of scope, so the pointer never dangles.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
Node::~Node() {
  // A chain of 10^5 nodes would otherwise be destroyed by 10^5 nested destructor calls. Instead,
  // children that die with this node are handed to the outermost ~Node, which frees them in a loop.
  std::vector<std::shared_ptr<Node>> worklist;
  bool outermost = nodes_to_free == nullptr;
  if (outermost) nodes_to_free = &worklist;
  // The saved tensors go first: a saved input also holds its grad_fn, one of the edges' nodes,
  // which must be left to the edge alone to be handed over below.
  backward_ = nullptr;
  // Every child reference is handed over, not only the last ones: y + y holds its child twice
  // (a count of 2 at both edges), and checking for a count of 1 left it to the edges' own
  // destructor, which recursed (a chain of 200,000 such nodes overflowed the stack). A reference
  // that is not the last is simply dropped from the worklist.
  for (Edge& edge : edges_) {
    if (edge.node) nodes_to_free->push_back(std::move(edge.node));
  }
  if (outermost) {
    while (!worklist.empty()) {
      std::shared_ptr<Node> next = std::move(worklist.back());
      worklist.pop_back();
      next.reset();  // its destructor appends its own children to `worklist`
    }
    nodes_to_free = nullptr;
  }
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif

Grads Node::apply(const Tensor& grad_output) {
  SG_CHECK(!released_,
           "backward: the graph through '{}' was already freed by an earlier backward(); call "
           "backward(gradient, /*retain_graph=*/true) the first time to backpropagate twice",
           name_);
  struct Running {  // restored on exit: a backward may run a nested backward (composed_backward)
    Node* previous = running_node;
    explicit Running(Node* node) { running_node = node; }
    ~Running() { running_node = previous; }
  } running(this);
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

Node* Node::running() { return running_node; }

void Node::release() {
  backward_ = nullptr;
  released_ = true;
}

SavedTensor::SavedTensor(const Tensor& t, bool is_output) {
  if (!t.defined() || !is_grad_enabled()) return;
  // An input that requires grad keeps its identity; the output, and whatever has no history
  // (which might be the output before record() gives it a grad_fn), is kept detached.
  tensor_ = !is_output && t.requires_grad() ? t : t.detach();
  version_ = t.version();
  is_output_ = is_output;
}

Tensor SavedTensor::get() const {
  SG_CHECK(!tensor_.defined() || tensor_.version() == version_,
           "a tensor of shape {} saved for backward was modified by an in-place operation "
           "(version {} at save, {} now); clone() it before changing it in place",
           tensor_.shape(), version_, tensor_.version());
  if (!is_output_ || !is_grad_enabled() || Node::running() == nullptr) return tensor_;
  // create_graph: the output as the running node made it, so the gradient's graph goes through it.
  auto impl = std::make_shared<TensorImpl>(*tensor_.impl());
  impl->grad_fn = Node::running()->shared_from_this();
  impl->requires_grad = true;
  return Tensor(std::move(impl));
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
