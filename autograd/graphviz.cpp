// Graphviz export of the autograd graph (autograd/graphviz.h).
#include "autograd/graphviz.h"

#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autograd/node.h"

namespace sg {

namespace {

// Ids in order of discovery, so the same graph always prints the same text.
class DotWriter {
 public:
  // Returns the id of `key`, and whether it is new (then the caller declares the vertex).
  std::pair<std::string, bool> id_of(const void* key) {
    auto [it, inserted] = ids_.try_emplace(key, fmt::format("n{}", ids_.size()));
    return {it->second, inserted};
  }
  void line(const std::string& text) { text_ += "  " + text + "\n"; }
  std::string finish() { return "digraph autograd {\n" + text_ + "}\n"; }

 private:
  std::unordered_map<const void*, std::string> ids_;
  std::string text_;
};

using LeafNames = std::unordered_map<const TensorImpl*, std::string>;

std::string leaf_label(const TensorImpl& leaf, const LeafNames& names) {
  auto it = names.find(&leaf);
  return fmt::format("{}\\n{} {}", it == names.end() ? "leaf" : it->second, leaf.shape, leaf.dtype);
}

std::string op_vertex(const std::string& id, const Node& node, const char* style) {
  return fmt::format("{} [shape=box{}, label=\"{}\\n{}{}\"];", id, style, node.name(),
                     node.output_shape(), node.released() ? "\\n(freed)" : "");
}

}  // namespace

std::string to_dot(const Tensor& root, const std::vector<std::pair<std::string, Tensor>>& names) {
  SG_CHECK(root.defined(), "to_dot: called on an undefined tensor");
  LeafNames leaf_names;
  for (const auto& [name, tensor] : names) {
    SG_CHECK(tensor.defined(), "to_dot: the tensor named '{}' is undefined", name);
    leaf_names.emplace(tensor.impl(), name);
  }
  DotWriter dot;
  dot.line("// Boxes: recorded ops. Ellipses: leaves that receive .grad().");
  dot.line("// Arrows: grad_fn()->edges(), the way backward() sends gradients.");
  dot.line("node [fontname=\"Helvetica\", fontsize=11];");
  if (!root.grad_fn()) {
    std::string what = root.requires_grad()
                           ? leaf_label(*root.impl(), leaf_names)
                           : fmt::format("{} (no graph: does not require grad)", root.shape());
    dot.line(fmt::format("n0 [shape=ellipse, label=\"{}\"];", what));
    return dot.finish();
  }

  // Iterative depth-first walk: a graph 10^5 nodes deep must not overflow the stack.
  Node* root_node = root.grad_fn().get();
  dot.line(op_vertex(dot.id_of(root_node).first, *root_node, ", style=bold"));
  std::vector<Node*> stack{root_node};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    std::string from = dot.id_of(node).first;
    const std::vector<Edge>& edges = node->edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& edge = edges[i];
      if (!edge.needs_grad()) continue;  // an input that needs no gradient: not in the graph
      const void* key = edge.node ? static_cast<const void*>(edge.node.get()) : edge.leaf.get();
      auto [to, is_new] = dot.id_of(key);
      if (is_new && edge.node) {
        dot.line(op_vertex(to, *edge.node, ""));
        stack.push_back(edge.node.get());
      } else if (is_new) {
        dot.line(fmt::format("{} [shape=ellipse, label=\"{}\"];", to,
                             leaf_label(*edge.leaf, leaf_names)));
      }
      // Label the input slot only where an op has several inputs (a - b: which is which).
      std::string label = edges.size() > 1 ? fmt::format(" [label=\"{}\"]", i) : "";
      dot.line(fmt::format("{} -> {}{};", from, to, label));
    }
  }
  return dot.finish();
}

}  // namespace sg
