// Chapter 2: broadcasting, elementwise ops and reductions.
//
// The rule (NumPy's and PyTorch's): line the shapes up on the right; each pair of sizes must be
// equal, or one of them 1 (or missing), and a size-1 dim is stretched to the other size:
//
//   [3, 1]                    [2, 1, 5]
//      [4]  ->  [1, 4]           [3, 1]  ->  [1, 3, 1]
//   result      [3, 4]        result         [2, 3, 5]
//
// Stretching copies nothing: it is expand(), a stride of 0. In backward, an input that was
// stretched receives the sum of the gradients of all the places it was copied to (sum_to).
//
// Run: ./build/examples/02_broadcasting   Test: ctest --test-dir build -L ch02
#include <fmt/format.h>

#include "autograd/autograd.h"
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

}  // namespace

int main(int argc, char** argv) {
  example::parse_args(argc, argv);  // no options of its own: refuses typos
  fmt::print("== 1. The broadcasting rule\n");
  sg::Tensor col = sg::tensor({{0}, {10}, {20}});  // [3, 1]
  sg::Tensor row = sg::tensor({1, 2, 3, 4});       // [4]
  sg::Tensor table = col + row;                    // [3, 4]: table[i][j] = col[i][0] + row[j]
  fmt::print("col {} + row {} -> {}\n{}\n", col.shape(), row.shape(), table.shape(), table);
  const sg::Shape pairs[][2] = {
      {{3, 1}, {4}}, {{2, 1, 5}, {3, 1}}, {{8, 1, 6, 1}, {7, 1, 5}}, {{5}, {}}};
  for (const auto& [a, b] : pairs) {
    fmt::print("  {} with {} -> {}\n", a, b, sg::broadcast_shapes("add", a, b));
  }
  fmt::print("  row.expand({{3, 4}}) has strides {}: no copy\n", row.expand({3, 4}).strides());

  fmt::print("\n== 2. Elementwise ops\n");
  sg::Tensor x = sg::tensor({-2.0, -0.5, 0.0, 1.0, 3.0});
  fmt::print("x          = {}\n", x);
  fmt::print("relu(x)    = {}\n", sg::relu(x));
  fmt::print("exp(x)     = {}\n", x.exp());
  fmt::print("2 * x + 1  = {}\n", 2.0 * x + 1.0);
  fmt::print("sigmoid(x) = {}\n", x.sigmoid());
  fmt::print("x > 0      = {}   (comparisons give bool)\n", x > 0);
  // Promotion: bool < int64 < float32 < float64, as PyTorch does for two tensors.
  sg::Tensor ids = sg::arange(3);  // int64
  fmt::print("int64 + float32 -> {}; int64 + 0.5 -> {}; bool * float32 -> {}\n",
             (ids + sg::ones({3})).dtype(), (ids + 0.5).dtype(), ((x > 0) * x).dtype());

  fmt::print("\n== 3. When shapes do not broadcast\n");
  try {
    (void)(sg::ones({2, 3}) + sg::ones({2}));
    check(false, "[2, 3] + [2] should have thrown");
  } catch (const sg::Error& e) {
    fmt::print("  ones({{2, 3}}) + ones({{2}}) throws: {}\n", e.what());
  }

  fmt::print("\n== 4. Reductions, with and without keepdim\n");
  sg::Tensor m = sg::tensor({{1, 2, 3}, {4, 5, 9}});  // [2, 3]
  fmt::print("m =\n{}\n", m);
  fmt::print("m.sum()               = {}  (shape [])\n", m.sum());
  fmt::print("m.sum(1)              = {}  (shape {})\n", m.sum(1), m.sum(1).shape());
  fmt::print("m.sum(1, keepdim)     = shape {}, to broadcast against m:\n{}\n",
             m.sum(1, true).shape(), m.sum(1, true));
  auto [values, indices] = m.max(1);
  fmt::print("m.max(1)              = values {}, indices {}\n", values, indices);
  // keepdim keeps a size-1 dim so the result broadcasts back against m: centre each row.
  sg::Tensor centred = m - m.mean(1, true);  // [2, 3] - [2, 1]
  fmt::print("m - m.mean(1, keepdim) =\n{}\n", centred);
  check(centred.sum(1).abs().max().item<double>() < 1e-6, "every centred row sums to 0");
  try {
    (void)(m - m.mean(1));  // [2, 3] - [2]: lines up the 2 with the 3
    check(false, "without keepdim the shapes should not broadcast");
  } catch (const sg::Error& e) {
    fmt::print("  without keepdim: {}\n", e.what());
  }

  fmt::print("\n== 5. The gradient of a broadcast input is summed back (sum_to)\n");
  sg::Tensor b = sg::tensor({1, 2, 3, 4}, sg::TensorOptions().requires_grad(true));     // [4]
  sg::Tensor c = sg::tensor({{1}, {2}, {3}}, sg::TensorOptions().requires_grad(true));  // [3, 1]
  sg::Tensor y = (c * b).sum();  // c * b is [3, 4]
  y.backward();
  // d y / d b[j] = sum over i of c[i] = 6: b[j] was used in all 3 rows.
  // d y / d c[i] = sum over j of b[j] = 10: c[i] was used in all 4 columns.
  fmt::print("y = (c * b).sum() with c [3, 1], b [4]\n");
  fmt::print("b.grad() = {}   (shape {})\n", b.grad(), b.grad().shape());
  fmt::print("c.grad() =\n{}\n", c.grad());
  check(max_diff(b.grad(), sg::full({4}, 6)) == 0, "b.grad() = [6, 6, 6, 6]");
  check(max_diff(c.grad(), sg::full({3, 1}, 10)) == 0, "c.grad() = [[10], [10], [10]]");
  // The engine's reduction, called by hand: the [3, 4] gradient of c * b, summed down to b.
  sg::Tensor g_out = c.detach().expand({3, 4});  // d(c*b)/db, before reduction
  fmt::print("sum_to(g [3, 4], [4]) = {}\n", sg::sum_to(g_out, {4}));
  check(max_diff(sg::sum_to(g_out, {4}), b.grad()) == 0, "sum_to gives the same as backward");

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
