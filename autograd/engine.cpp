// The backward engine (engine.h). The algorithm is run_backward's loop: put the seeds at the
// roots' nodes, order the graph so that every node comes before the nodes it sends gradients to
// (topological_order: Kahn's algorithm), and run the nodes in that order; by its turn a node has
// received all of its gradient, and what it returns is added into the nodes and leaves its edges
// point at. The rest are named pieces beside the loop, which a first reading may skip:
//   GradientSink   where leaves' gradients go: accumulated into .grad() (running the hooks that
//                  wait for a leaf's whole gradient), or captured for autograd::grad, which also
//                  skips the nodes that lead to no input it asked for;
//   apply_node     a node's backward, charged to it by the profiler, its errors naming it;
//   shaped_for     a gradient summed back over broadcast dims, in its input's dtype.
// Anomaly mode checks each node's result inside Node::apply (node.cpp).
#include "autograd/engine.h"

#include <mutex>
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
// Two threads' backward passes may reach one leaf at once (two graphs that share a parameter):
// its .grad is read and replaced under this lock, or one of the two sums is lost (or a half-made
// tensor is read). PyTorch's AccumulateGrad locks too.
std::mutex leaf_grad_mutex;

void accumulate_into_leaf(TensorImpl& leaf, Tensor grad) {
  // A graph records its leaves' shapes when it is built; set_data may give a leaf another shape
  // or dtype after that, and its gradient would then not be the leaf's own.
  SG_CHECK(grad.shape() == leaf.shape && grad.dtype() == leaf.dtype,
           "backward: a leaf's gradient is {} {}, but the leaf is {} {} now (set_data changed it "
           "after the graph that uses it was built; run the forward again)",
           grad.dtype(), grad.shape(), leaf.dtype, leaf.shape);
  const std::lock_guard<std::mutex> lock(leaf_grad_mutex);
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

// Where the gradients of leaves go. backward() accumulates them into each leaf's .grad(), and a
// leaf's post-accumulate-grad hooks run once all of its contributions have arrived
// (autograd/grad_hooks.h). autograd::grad(outputs, inputs) instead captures the gradients of its
// inputs, leaves or not, touches no .grad(), and runs only the nodes from which an input can be
// reached (the rest of the graph leads to gradients nobody asked for).
class GradientSink {
 public:
  explicit GradientSink(const std::vector<Tensor>& inputs) : grads_(inputs.size()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& x = inputs[i];
      SG_CHECK(x.defined() && x.requires_grad(),
               "grad: input {} does not require grad, so it has no gradient to take", i);
      // An input given twice (or two aliases of one node's output) gets the gradient twice.
      if (x.grad_fn()) {
        captured_nodes_[x.grad_fn().get()].push_back(i);
      } else {
        captured_leaves_[x.impl()].push_back(i);
      }
    }
  }

  // Looks at the graph once, in topological order, before anything runs.
  void prepare(const std::vector<Node*>& order) {
    if (capturing()) {
      for (auto it = order.rbegin(); it != order.rend(); ++it) {  // edges point to later nodes
        bool leads = false;
        for (const Edge& edge : (*it)->edges()) {
          if (edge.leaf) leads = leads || captured_leaves_.count(edge.leaf.get()) > 0;
          if (edge.node) {
            leads = leads || captured_nodes_.count(edge.node.get()) > 0 ||
                    leads_to_inputs_[edge.node.get()];
          }
        }
        leads_to_inputs_[*it] = leads;
      }
    } else if (any_post_accumulate_grad_hooks()) {  // free when no hook is registered anywhere
      for (Node* node : order) {
        for (const Edge& edge : node->edges()) {
          if (edge.leaf && has_post_accumulate_grad_hooks(edge.leaf.get())) {
            ++hooked_leaf_uses_[edge.leaf.get()];
          }
        }
      }
    }
  }

  // A node's whole gradient, before it runs: captured if the node made an input; false when no
  // input asked for lies behind the node, which then need not run.
  bool wants(Node* node, const Tensor& grad_output) {
    if (!capturing()) return true;
    if (auto it = captured_nodes_.find(node); it != captured_nodes_.end()) {
      capture(it->second, grad_output);
    }
    return leads_to_inputs_[node];
  }

  // A root that is a leaf (backward() on a leaf): its seed is its whole gradient, delivered at
  // once, and its hooks run at once.
  void to_root_leaf(const std::shared_ptr<TensorImpl>& leaf, const Tensor& seed) {
    if (capturing()) return to_leaf(leaf, seed);
    if (!leaf->requires_grad) return;  // frozen since the graph was built: no gradient, as PyTorch
    accumulate_into_leaf(*leaf, seed);
    if (any_post_accumulate_grad_hooks()) run_post_accumulate_grad_hooks(leaf);
  }

  // One contribution to a leaf's gradient.
  void to_leaf(const std::shared_ptr<TensorImpl>& leaf, Tensor grad) {
    if (capturing()) {
      if (auto it = captured_leaves_.find(leaf.get()); it != captured_leaves_.end()) {
        capture(it->second, grad);
      }
      return;
    }
    // A leaf frozen (requires_grad_(false)) between the forward and this backward gets no
    // gradient, as PyTorch's AccumulateGrad: an optimizer would otherwise update it.
    if (!leaf->requires_grad) return;
    accumulate_into_leaf(*leaf, std::move(grad));
    auto hooked = hooked_leaf_uses_.find(leaf.get());
    if (hooked != hooked_leaf_uses_.end() && --hooked->second == 0) {
      run_post_accumulate_grad_hooks(leaf);
    }
  }

  // The inputs' gradients (autograd::grad), checked; nothing for backward().
  std::vector<Tensor> result(const std::vector<Tensor>& inputs, bool allow_unused) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      SG_CHECK(grads_[i].defined() || allow_unused,
               "grad: input {} (shape {}) is not reachable from the outputs, so it has no "
               "gradient; pass allow_unused=true to get an undefined tensor for it",
               i, inputs[i].shape());
    }
    return std::move(grads_);
  }

 private:
  bool capturing() const { return !grads_.empty(); }
  void capture(const std::vector<size_t>& positions, const Tensor& grad) {
    for (size_t i : positions) grads_[i] = grads_[i].defined() ? grads_[i] + grad : grad;
  }

  std::vector<Tensor> grads_;  // one per input of autograd::grad; empty for backward()
  std::unordered_map<TensorImpl*, std::vector<size_t>> captured_leaves_;
  std::unordered_map<Node*, std::vector<size_t>> captured_nodes_;
  std::unordered_map<Node*, bool> leads_to_inputs_;
  std::unordered_map<TensorImpl*, int> hooked_leaf_uses_;  // contributions still to come
};

// Runs a node's backward: the profiler charges the time to the node, and an error from inside
// names it. Without retain_graph the node's saved tensors are freed right after.
Grads apply_node(Node& node, const Tensor& grad_output, bool retain_graph) {
  Grads grads;
  try {
    SG_PROFILE_OP(node.name());
    grads = node.apply(grad_output);
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind("backward", 0) == 0) throw;
    SG_FAIL("backward of '{}': {}", node.name(), what);
  }
  if (!retain_graph) node.release();
  SG_CHECK(grads.size() == node.edges().size(),
           "backward of '{}': returned {} gradients for {} inputs", node.name(), grads.size(),
           node.edges().size());
  return grads;
}

// The gradient an edge's input receives: zeros where the node returned none (an input masked out
// entirely), summed down to the input's shape where the forward broadcast it (the one place
// broadcasting is undone), in the input's dtype.
Tensor shaped_for(const Edge& edge, Tensor grad, Device device) {
  if (!grad.defined()) return zeros(edge.shape, TensorOptions(edge.dtype).device(device));
  if (grad.shape() != edge.shape) grad = sum_to(grad, edge.shape);
  if (grad.dtype() != edge.dtype) grad = grad.to(edge.dtype);
  return grad;
}

// Adds one contribution to the gradient waiting at `node`.
void add_to(std::unordered_map<Node*, Tensor>& pending, Node* node, Tensor grad) {
  auto [it, inserted] = pending.try_emplace(node, grad);
  if (!inserted) it->second = it->second + grad;
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
  GradientSink sink(inputs);
  // Backward formulas are recorded only for create_graph (a graph of the gradient).
  GradModeGuard grad_mode(create_graph);
  // --8<-- [start:backward_loop]
  std::vector<Tensor> seeds;  // all checked before anything runs
  for (size_t i = 0; i < roots.size(); ++i) {
    seeds.push_back(seed_of(roots[i], gradients[i], create_graph));
  }
  std::unordered_map<Node*, Tensor> pending;  // each node's gradient, summed as it arrives
  std::vector<Node*> starts;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!roots[i].grad_fn()) {  // backward() on a leaf: its gradient is the seed itself
      sink.to_root_leaf(roots[i].impl_ptr(), seeds[i]);
      continue;
    }
    Node* node = roots[i].grad_fn().get();
    if (!pending.count(node)) starts.push_back(node);
    add_to(pending, node, std::move(seeds[i]));
  }
  const std::vector<Node*> order = topological_order(starts, count_dependencies(starts));
  sink.prepare(order);
  for (Node* node : order) {
    // Every edge into this node comes from a node earlier in the order: its gradient is whole.
    Tensor grad_output = std::move(pending[node]);
    pending.erase(node);
    if (!sink.wants(node, grad_output)) continue;
    Grads grads = apply_node(*node, grad_output, retain_graph);
    const Device device = grad_output.device();
    // Let go of the incoming gradient, so that one passed on unchanged (or as a view) is
    // referenced only by what it is passed to.
    grad_output = Tensor();
    for (size_t i = 0; i < grads.size(); ++i) {
      const Edge& edge = node->edges()[i];
      if (!edge.needs_grad()) continue;
      Tensor grad = shaped_for(edge, std::move(grads[i]), device);
      if (edge.leaf) {
        sink.to_leaf(edge.leaf, std::move(grad));
      } else {
        add_to(pending, edge.node.get(), std::move(grad));
      }
    }
  }
  // --8<-- [end:backward_loop]
  return sink.result(inputs, allow_unused);
}

}  // namespace sg
