#include "autograd/engine.h"

#include <unordered_map>

#include "autograd/factory.h"
#include "autograd/grad_hooks.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"

namespace sg {

namespace {

// Adds `grad` into a leaf's .grad(). The first gradient is copied unless nothing else can see it,
// so that an in-place change to one leaf's .grad() (clip_grad_norm_, say) can never reach
// another's.
void accumulate_into_leaf(TensorImpl& leaf, Tensor grad) {
  if (!leaf.grad) {
    // Kept as is only when nothing else can reach its memory (no other tensor or view of the same
    // storage): the common case, a gradient just computed for this leaf alone, costs no copy.
    if (grad.impl()->storage.use_count() > 1 || !grad.is_contiguous()) grad = grad.clone();
    leaf.grad = grad.impl_ptr();
  } else {
    leaf.grad = (Tensor(leaf.grad) + grad).impl_ptr();
  }
}

// Counts, for every node reachable from `root`, how many edges point at it. Iterative DFS: a
// 10^5-node chain must not overflow the stack.
std::unordered_map<Node*, int> count_dependencies(Node* root) {
  std::unordered_map<Node*, int> deps{{root, 0}};
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& edge : node->edges()) {
      if (!edge.node) continue;
      auto [it, inserted] = deps.try_emplace(edge.node.get(), 0);
      ++it->second;
      if (inserted) stack.push_back(edge.node.get());
    }
  }
  return deps;
}

// For each leaf with a post-accumulate-grad hook, how many edges of this graph deliver into it:
// its hooks run once that many contributions have arrived (autograd/grad_hooks.h). Empty, and
// free, when no hook is registered anywhere.
std::unordered_map<TensorImpl*, int> count_hooked_leaf_uses(
    const std::unordered_map<Node*, int>& nodes) {
  std::unordered_map<TensorImpl*, int> uses;
  if (!any_post_accumulate_grad_hooks()) return uses;
  for (const auto& [node, deps] : nodes) {
    for (const Edge& edge : node->edges()) {
      if (edge.leaf && has_post_accumulate_grad_hooks(edge.leaf.get())) ++uses[edge.leaf.get()];
    }
  }
  return uses;
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  SG_CHECK(root.defined(), "backward: called on an undefined tensor");
  SG_CHECK(root.requires_grad(),
           "backward: the tensor of shape {} does not require grad and has no grad_fn (did an "
           "input set requires_grad? was it computed under NoGradGuard?)",
           root.shape());
  Tensor seed = gradient;
  if (!seed.defined()) {
    SG_CHECK(root.numel() == 1,
             "backward: grad can be implicitly created only for a scalar output, but the output "
             "has shape {}; pass a gradient of that shape",
             root.shape());
    seed = ones_like(root);
  }
  SG_CHECK(seed.shape() == root.shape(),
           "backward: gradient has shape {} but the output has shape {}", seed.shape(),
           root.shape());
  SG_CHECK(seed.dtype() == root.dtype() && seed.device() == root.device(),
           "backward: gradient is {} on {} but the output is {} on {}", seed.dtype(), seed.device(),
           root.dtype(), root.device());

  NoGradGuard no_grad;  // backward formulas are not themselves recorded (no double backward)
  seed = seed.detach();
  if (!root.grad_fn()) {  // backward() on a leaf: its gradient is the seed itself
    accumulate_into_leaf(*root.impl(), seed);
    if (any_post_accumulate_grad_hooks()) run_post_accumulate_grad_hooks(root.impl_ptr());
    return;
  }

  // Kahn's algorithm: a node runs when every edge pointing at it has delivered its gradient.
  Node* root_node = root.grad_fn().get();
  std::unordered_map<Node*, int> deps = count_dependencies(root_node);
  std::unordered_map<TensorImpl*, int> hooked_leaf_uses = count_hooked_leaf_uses(deps);
  std::unordered_map<Node*, Tensor> pending{{root_node, seed}};
  std::vector<std::shared_ptr<Node>> ready{root.grad_fn()};
  while (!ready.empty()) {
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    Tensor grad_output = std::move(pending[node.get()]);
    pending.erase(node.get());

    Grads grads;
    try {
      SG_PROFILE_OP(node->name());  // a backward function is charged to its node
      grads = node->apply(grad_output);
    } catch (const Error& e) {
      std::string what = e.what();
      if (what.rfind("backward", 0) == 0) throw;
      SG_FAIL("backward of '{}': {}", node->name(), what);
    }
    if (!retain_graph) node->release();
    // Let go of this node's incoming gradient, so that a gradient it passes on unchanged (or as a
    // view) is referenced only by what it is passed to.
    const Device device = grad_output.device();
    grad_output = Tensor();
    SG_CHECK(grads.size() == node->edges().size(),
             "backward of '{}': returned {} gradients for {} inputs", node->name(), grads.size(),
             node->edges().size());

    for (size_t i = 0; i < grads.size(); ++i) {
      const Edge& edge = node->edges()[i];
      if (!edge.needs_grad()) continue;
      Tensor grad = std::move(grads[i]);
      if (!grad.defined()) {
        // No gradient for this input (e.g. it was masked out entirely): treat as zeros.
        grad = zeros(edge.shape, TensorOptions(edge.dtype).device(device));
      }
      // The one place broadcasting is undone: sum the gradient down to the input's shape.
      if (grad.shape() != edge.shape) grad = sum_to(grad, edge.shape);
      if (grad.dtype() != edge.dtype) grad = grad.to(edge.dtype);

      if (edge.leaf) {
        accumulate_into_leaf(*edge.leaf, std::move(grad));
        auto hooked = hooked_leaf_uses.find(edge.leaf.get());
        if (hooked != hooked_leaf_uses.end() && --hooked->second == 0) {
          run_post_accumulate_grad_hooks(edge.leaf);
        }
        continue;
      }
      Node* child = edge.node.get();
      auto [it, inserted] = pending.try_emplace(child, grad);
      if (!inserted) it->second = it->second + grad;
      if (--deps[child] == 0) ready.push_back(edge.node);
    }
  }
}

}  // namespace sg
