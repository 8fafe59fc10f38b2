// Chapter 3: reverse-mode automatic differentiation.
//
// Every op that has an input requiring grad records a Node: its name, one edge per input, and a
// backward function (g -> input gradients). backward() walks those nodes from the output to the
// leaves, in an order where a node runs only after all its consumers have sent their gradient
// (Kahn's algorithm), and adds each leaf's gradient into leaf.grad().
//
// Run: ./build/examples/03_autograd [--out DIR]   (writes DIR/03_autograd_graph.dot and
//      DIR/03_autograd_grad_graph.dot, the graph of a gradient)
// Test: ctest --test-dir build -L ch03
#include <fmt/format.h>

#include "autograd/autograd.h"
#include "autograd/graphviz.h"
#include "example_args.h"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  fmt::print("  [{}] {}\n", ok ? "ok" : "FAILED", what);
  failures += ok ? 0 : 1;
}

double max_diff(const sg::Tensor& a, const sg::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

sg::TensorOptions leaf_options() { return sg::TensorOptions(sg::kFloat64).requires_grad(true); }

// Sections 1 to 5 (they share x), then 6, 7 and 8: a function each, which main() calls in order.
// The chapter's sections, a function each (1 to 5 share x), run in order by main().
void first_derivatives() {
  fmt::print("== 1. y = a x^2 + b: the derivative by hand, and by the engine\n");
  const double a = 3, b = 2;
  sg::Tensor x = sg::tensor({1, 2, 3}, leaf_options());
  sg::Tensor y = a * x.pow(2) + b;
  fmt::print("y = {}\ny.grad_fn() = '{}', with {} edges\n", y, y.grad_fn()->name(),
             y.grad_fn()->edges().size());
  y.sum().backward();                       // d(sum y)/dx_i = dy_i/dx_i
  sg::Tensor by_hand = 2 * a * x.detach();  // dy/dx = 2 a x
  fmt::print("engine: x.grad() = {}\nby hand:  2 a x  = {}\n", x.grad(), by_hand);
  check(max_diff(x.grad(), by_hand) < 1e-12, "the engine agrees with the formula");

  fmt::print("\n== 2. A diamond: a tensor used twice receives the sum of both gradients\n");
  sg::Tensor w = sg::tensor({0.5, -1.0}, leaf_options());
  sg::Tensor u = w.tanh();                 //        w -> u
  sg::Tensor z = (u * 2 + u.exp()).sum();  // u -> (2u, exp u) -> z: two paths from u to z
  z.backward();
  // dz/du = 2 + exp(u), then the chain rule through tanh: du/dw = 1 - u^2
  sg::Tensor ud = u.detach();
  sg::Tensor expected = (2 + ud.exp()) * (1 - ud * ud);
  fmt::print("w.grad() = {}\nby hand  = {}\n", w.grad(), expected);
  check(max_diff(w.grad(), expected) < 1e-12, "both paths through u were added up");
  (w * w).sum().backward();  // leaf gradients ACCUMULATE across backward() calls...
  check(max_diff(w.grad(), expected + 2 * w.detach()) < 1e-12, "grad accumulates: += 2w");
  w.set_grad(sg::Tensor());  // ...until cleared (an optimizer's zero_grad)

  fmt::print("\n== 3. NoGradGuard: no graph is recorded\n");
  {
    sg::NoGradGuard no_grad;
    sg::Tensor v = x * 2;
    fmt::print("under NoGradGuard: (x * 2).requires_grad() = {}, grad_fn = {}\n", v.requires_grad(),
               v.grad_fn() ? "set" : "none");
    check(!v.requires_grad(), "evaluation and optimizer steps record nothing");
  }

  fmt::print("\n== 4. detach(): the same data, cut off from the graph\n");
  sg::Tensor xd = x.detach();
  check(xd.shares_storage(x) && !xd.requires_grad(), "detach shares storage, needs no grad");
  x.set_grad(sg::Tensor());
  (x * x.detach()).sum().backward();  // d/dx (x * const) = const = x, not 2x
  fmt::print("d/dx sum(x * x.detach()) = {}  (the detached factor is a constant)\n", x.grad());
  check(max_diff(x.grad(), x.detach()) < 1e-12, "no gradient flowed through the detached path");

  fmt::print("\n== 5. retain_graph, and the error after the graph is freed\n");
  sg::Tensor loss = (x * x).sum();
  loss.backward(sg::Tensor(), /*retain_graph=*/true);  // keep the saved tensors
  loss.backward();                                     // fine; frees the graph afterwards
  try {
    loss.backward();
    check(false, "a third backward() should have thrown");
  } catch (const sg::Error& e) {
    fmt::print("third backward() throws:\n  {}\n", e.what());
  }
}

void gradcheck_finds_a_wrong_backward() {
  fmt::print("\n== 6. gradcheck: compare with central differences (f(x+e) - f(x-e)) / 2e\n");
  sg::manual_seed(0);
  sg::Tensor t = sg::randn({3, 4}, leaf_options());
  auto tanh_fn = [](const std::vector<sg::Tensor>& in) { return sg::tanh(in[0]); };
  sg::GradcheckResult good = sg::gradcheck(tanh_fn, {t});
  fmt::print("tanh: ok = {}, max |analytic - numeric| = {:.2e}\n", good.ok, good.max_abs_error);
  check(good.ok, "tanh's backward (dx = g (1 - y^2)) passes gradcheck");
  // An op with a deliberately wrong backward: dx = g (1 - y) instead of g (1 - y^2).
  auto wrong_tanh = [](const std::vector<sg::Tensor>& in) {
    sg::Tensor out;
    {
      sg::NoGradGuard no_grad;  // compute the value only; we record our own node below
      out = sg::tanh(in[0]);
    }
    return sg::record("wrong_tanh", out, {in[0]}, [y = sg::SavedTensor(out)](const sg::Tensor& g) {
      return sg::Grads{g * (1 - y.get())};
    });
  };
  sg::GradcheckResult bad = sg::gradcheck(wrong_tanh, {t});
  fmt::print("wrong_tanh: ok = {}; the report:\n{}\n", bad.ok, bad.report);
  check(!bad.ok, "gradcheck catches the wrong formula");
}

void export_the_graph(const std::string& out_dir) {
  fmt::print("\n== 7. The graph, exported to Graphviz\n");
  sg::Tensor p = sg::tensor({1, 2}, leaf_options());
  sg::Tensor q = sg::tensor({3, 4}, leaf_options());
  sg::Tensor r = ((p * q + p).tanh()).sum();  // p is used twice: two arrows reach it
  std::string dot = sg::to_dot(r, {{"p", p}, {"q", q}});
  std::string path = out_dir + "/03_autograd_graph.dot";
  example::write_text(path, dot);
  fmt::print("{}wrote {}; draw it with: dot -Tsvg {} -o graph.svg\n", dot, path, path);
  check(dot.find("tanh") != std::string::npos && dot.find("label=\"q") != std::string::npos,
        "the DOT text names the ops and the leaves");
}

void gradients_of_gradients(const std::string& out_dir) {
  fmt::print("\n== 8. Gradients of gradients: create_graph\n");
  // With create_graph the backward pass is recorded like any other computation, so the gradient
  // is a tensor with a graph of its own and can be differentiated again.
  sg::Tensor c = sg::tensor({2.0}, leaf_options());
  sg::Tensor cube = c * c * c;
  sg::Tensor dcube = sg::autograd::grad({cube}, {c}, {}, std::nullopt, /*create_graph=*/true)[0];
  sg::Tensor d2cube = sg::autograd::grad({dcube}, {c})[0];
  fmt::print("y = x^3 at x = 2: dy/dx = {} (3x^2), d2y/dx2 = {} (6x)\n", dcube.item<double>(),
             d2cube.item<double>());
  check(dcube.item<double>() == 12.0 && d2cube.item<double>() == 12.0,
        "the gradient differentiates again");

  // Hessian-vector product (Pearlmutter): Hv = d/dh (grad f(h) . v), two backward passes and
  // never the n x n Hessian. f(h) = sum(tanh(h) * h) for h of 3 elements.
  auto f = [](const sg::Tensor& m) { return (m.tanh() * m).sum(); };
  sg::Tensor h = sg::tensor({0.5, -1.0, 2.0}, leaf_options());
  sg::Tensor v = sg::tensor({1.0, 2.0, -1.0}, sg::kFloat64);
  sg::Tensor grad_h = sg::autograd::grad({f(h)}, {h}, {}, std::nullopt, true)[0];
  sg::Tensor hv = sg::autograd::grad({(grad_h * v).sum()}, {h})[0];
  // The same from finite differences of the gradient: (grad f(h + e v) - grad f(h - e v)) / 2e.
  const double e = 1e-6;
  auto gradient_at = [&](const sg::Tensor& at) {
    sg::Tensor leaf = at.detach().requires_grad_();
    return sg::autograd::grad({f(leaf)}, {leaf})[0];
  };
  sg::Tensor numeric =
      (gradient_at(h.detach() + v * e) - gradient_at(h.detach() - v * e)) / (2 * e);
  fmt::print("Hv          = {}\nnumeric Hv  = {}\n", hv.str(), numeric.str());
  check(max_diff(hv, numeric) < 1e-6, "the Hessian-vector product matches finite differences");

  // What the graph of a gradient looks like: mul's backward formulas (g * b, g * a) as mul nodes,
  // adds where two paths meet, reaching x directly and through the forward's x * x (which the
  // second mul saved). The seed (ones) needs no gradient, so sum's backward leaves no node.
  sg::Tensor s = sg::tensor({1.0, 2.0}, leaf_options());
  sg::Tensor ds = sg::autograd::grad({(s * s * s).sum()}, {s}, {}, std::nullopt, true)[0];
  std::string grad_dot = sg::to_dot(ds, {{"x", s}});
  std::string grad_path = out_dir + "/03_autograd_grad_graph.dot";
  example::write_text(grad_path, grad_dot);
  fmt::print("{}wrote {}\n", grad_dot, grad_path);
  check(grad_dot.find("mul") != std::string::npos && ds.grad_fn() != nullptr,
        "the gradient has a graph of its own");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string out_dir = example::parse_args(argc, argv).out_dir;

  first_derivatives();
  gradcheck_finds_a_wrong_backward();
  export_the_graph(out_dir);
  gradients_of_gradients(out_dir);

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
