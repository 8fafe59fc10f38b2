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
  // --8<-- [start:ex03.accumulate_into_leaf]
  if (!leaf.grad) {
    // Kept as is only when nothing else can reach its memory (no other tensor or view of the same
    // storage): the common case, a gradient just computed for this leaf alone, costs no copy.
    if (grad.impl()->storage.use_count() > 1 || !grad.is_contiguous()) grad = grad.clone();
    leaf.grad = grad.impl_ptr();
  } else {
    leaf.grad = (Tensor(leaf.grad) + grad).impl_ptr();
  }
  // --8<-- [end:ex03.accumulate_into_leaf]
}

// Counts, for every node reachable from `roots`, how many edges point at it. Iterative DFS: a
// 10^5-node chain must not overflow the stack.
std::unordered_map<Node*, int> count_dependencies(const std::vector<Node*>& roots) {
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack;
  for (Node* root : roots) {
    if (deps.try_emplace(root, 0).second) stack.push_back(root);
  }
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

// The nodes in an order where every node comes before those its edges point at (Kahn's
// algorithm, run on a copy of the dependency counts without calling anything).
std::vector<Node*> topological_order(const std::vector<Node*>& roots,
                                     std::unordered_map<Node*, int> deps) {
  // --8<-- [start:ex03.topological_order]
  std::vector<Node*> order, ready;
  for (Node* root : roots) {
    if (deps[root] == 0) ready.push_back(root);
  }
  while (!ready.empty()) {
    Node* node = ready.back();
    ready.pop_back();
    order.push_back(node);
    for (const Edge& edge : node->edges()) {
      if (edge.node && --deps[edge.node.get()] == 0) ready.push_back(edge.node.get());
    }
  }
  return order;
  // --8<-- [end:ex03.topological_order]
}

// Where gradients are taken for sg::autograd::grad: the inputs' leaves and nodes, by position.
struct Captures {
  // An input given twice (or two aliases of one node's output) gets the same gradient twice.
  std::unordered_map<TensorImpl*, std::vector<size_t>> leaves;
  std::unordered_map<Node*, std::vector<size_t>> nodes;
  std::vector<Tensor> grads;
  bool active() const { return !grads.empty(); }
  void add(const std::vector<size_t>& positions, const Tensor& grad) {
    for (size_t i : positions) grads[i] = grads[i].defined() ? grads[i] + grad : grad;
  }
};

// The seed of one root: its gradient, checked, or 1 for a scalar.
Tensor seed_of(const Tensor& root, const Tensor& gradient, bool create_graph) {
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
  // A graph of the gradient starts at the seed, which may itself have one (a grad_output that
  // requires grad); without create_graph the seed is a plain value.
  return create_graph ? seed : seed.detach();
}

// For autograd::grad: the nodes worth running, those from which a captured input can be reached
// (the rest of the graph leads only to gradients nobody asked for). `order` is topological.
std::unordered_map<Node*, bool> nodes_leading_to(const std::vector<Node*>& order,
                                                 const Captures& captures) {
  std::unordered_map<Node*, bool> leads;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    bool any = false;
    for (const Edge& edge : (*it)->edges()) {
      if (edge.leaf && captures.leaves.count(edge.leaf.get())) any = true;
      if (edge.node && (captures.nodes.count(edge.node.get()) || leads[edge.node.get()])) {
        any = true;
      }
    }
    leads[*it] = any;
  }
  return leads;
}

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots,
                                 const std::vector<Tensor>& gradients, bool retain_graph,
                                 bool create_graph, const std::vector<Tensor>& inputs,
                                 bool allow_unused) {
  SG_CHECK(roots.size() == gradients.size(),
           "backward: got {} outputs but {} gradients; pass one gradient (or an undefined tensor) "
           "per output",
           roots.size(), gradients.size());
  std::vector<Tensor> seeds;
  for (size_t i = 0; i < roots.size(); ++i) {
    seeds.push_back(seed_of(roots[i], gradients[i], create_graph));
  }
  Captures captures;
  captures.grads.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    SG_CHECK(x.defined() && x.requires_grad(),
             "grad: input {} does not require grad, so it has no gradient to take", i);
    if (x.grad_fn()) {
      captures.nodes[x.grad_fn().get()].push_back(i);
    } else {
      captures.leaves[x.impl()].push_back(i);
    }
  }

  // Backward formulas are recorded only for create_graph (a graph of the gradient).
  GradModeGuard grad_mode(create_graph);
  std::unordered_map<Node*, Tensor> pending;
  std::vector<Node*> starts;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& root = roots[i];
    if (!root.grad_fn()) {  // backward() on a leaf: its gradient is the seed itself
      if (!captures.active()) {
        accumulate_into_leaf(*root.impl(), seeds[i]);
        if (any_post_accumulate_grad_hooks()) run_post_accumulate_grad_hooks(root.impl_ptr());
      } else if (auto it = captures.leaves.find(root.impl()); it != captures.leaves.end()) {
        captures.add(it->second, seeds[i]);
      }
      continue;
    }
    Node* node = root.grad_fn().get();
    auto [it, inserted] = pending.try_emplace(node, seeds[i]);
    if (inserted) {
      starts.push_back(node);
    } else {
      it->second = it->second + seeds[i];
    }
  }

  // Kahn's algorithm: a node runs when every edge pointing at it has delivered its gradient.
  std::unordered_map<Node*, int> deps = count_dependencies(starts);
  // Hooks run where gradients accumulate into .grad(), not for autograd::grad's captures.
  std::unordered_map<TensorImpl*, int> hooked_leaf_uses;
  if (!captures.active()) hooked_leaf_uses = count_hooked_leaf_uses(deps);
  std::vector<std::shared_ptr<Node>> ready;
  for (Node* node : starts) {
    if (deps[node] == 0) ready.push_back(node->shared_from_this());
  }
  std::unordered_map<Node*, bool> leads;
  if (captures.active()) leads = nodes_leading_to(topological_order(starts, deps), captures);

  while (!ready.empty()) {
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    Tensor grad_output = std::move(pending[node.get()]);
    pending.erase(node.get());
    if (captures.active()) {
      if (auto it = captures.nodes.find(node.get()); it != captures.nodes.end()) {
        captures.add(it->second, grad_output);
      }
      if (!leads[node.get()]) continue;  // nothing asked for lies behind it
    }

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
        if (!captures.active()) {
          accumulate_into_leaf(*edge.leaf, std::move(grad));
          auto hooked = hooked_leaf_uses.find(edge.leaf.get());
          if (hooked != hooked_leaf_uses.end() && --hooked->second == 0) {
            run_post_accumulate_grad_hooks(edge.leaf);
          }
        } else if (auto it = captures.leaves.find(edge.leaf.get()); it != captures.leaves.end()) {
          captures.add(it->second, grad);
        }
        continue;
      }
      Node* child = edge.node.get();
      auto [it, inserted] = pending.try_emplace(child, grad);
      if (!inserted) it->second = it->second + grad;
      if (--deps[child] == 0) ready.push_back(edge.node);
    }
  }

  for (size_t i = 0; i < inputs.size(); ++i) {
    SG_CHECK(captures.grads[i].defined() || allow_unused,
             "grad: input {} (shape {}) is not reachable from the outputs, so it has no gradient; "
             "pass allow_unused=true to get an undefined tensor for it",
             i, inputs[i].shape());
  }
  return std::move(captures.grads);
}

}  // namespace sg
