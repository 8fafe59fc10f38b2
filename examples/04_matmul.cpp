// Chapter 4: matrix multiplication, and why it goes through BLAS.
//
// C = A·B with A [M, K], B [K, N]: C[i][j] = Σ_k A[i][k] B[k][j], 2·M·N·K floating-point
// operations. A Transformer spends most of its time here, so the loop must be fast: OpenBLAS blocks
// it for the caches and uses the CPU's vector units. Its gradients are two more matmuls:
//   dA = G·Bᵀ    dB = Aᵀ·G     (G = dLoss/dC, [M, N])
//
// Run: ./build/examples/04_matmul [--quick]   Test: ctest --test-dir build -L ch04
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

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

// The textbook triple loop on contiguous row-major [n, n] matrices.
void naive_matmul(const float* a, const float* b, float* c, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t k = 0; k < n; ++k) sum += a[i * n + k] * b[k * n + j];
      c[i * n + j] = sum;
    }
  }
}

// Best time of `repeats` runs of fn, in seconds (the best run is the least disturbed one).
template <typename Fn>
double best_seconds(int repeats, Fn&& fn) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

// The chapter's sections, a function each (2 and 3 share the matrices), run in order by main().
void what_matmul_computes() {
  fmt::print("== 1. What matmul computes, shape by shape\n");
  sg::Tensor A = sg::tensor({{1, 2}, {3, 4}}), B = sg::tensor({{5, 6}, {7, 8}});
  fmt::print("[[1, 2], [3, 4]] · [[5, 6], [7, 8]] =\n{}\n", sg::matmul(A, B));
  check(max_diff(sg::matmul(A, B), sg::tensor({{19, 22}, {43, 50}})) == 0, "2-D: row · column");
  const sg::Shape cases[][2] = {
      {{2, 3}, {3, 4}},           // 2-D
      {{5, 2, 3}, {5, 3, 4}},     // batched: 5 independent products
      {{5, 2, 3}, {3, 4}},        // broadcast batch: B is shared by all 5 (stride 0, no copy)
      {{2, 1, 2, 3}, {4, 3, 5}},  // batch dims broadcast like elementwise ops: [2, 1] with [4]
      {{3}, {3}},                 // 1-D · 1-D: the dot product, a 0-d tensor
      {{2, 3}, {3}},              // matrix · vector
      {{3}, {3, 4}}};             // vector · matrix
  for (const auto& [sa, sb] : cases) {
    fmt::print("  {} · {} -> {}\n", sa, sb, sg::matmul(sg::ones(sa), sg::ones(sb)).shape());
  }
  try {
    (void)sg::matmul(sg::ones({2, 3}), sg::ones({4, 5}));
    check(false, "[2, 3] · [4, 5] should have thrown");
  } catch (const sg::Error& e) {
    fmt::print("  {}\n", e.what());
  }
}

void why_blas(bool quick) {
  fmt::print("\n== 2. Why BLAS: a naive triple loop against sg::matmul, n = 256\n");
  const int64_t n = 256;
  const double flops = 2.0 * n * n * n;
  sg::manual_seed(0);
  sg::Tensor a = sg::randn({n, n}), b = sg::randn({n, n});
  std::vector<float> c_naive(n * n);
  double t_naive = best_seconds(quick ? 1 : 3, [&] {
    naive_matmul(a.data_ptr<float>(), b.data_ptr<float>(), c_naive.data(), n);
  });
  sg::Tensor c_blas;
  double t_blas = best_seconds(quick ? 5 : 20, [&] { c_blas = sg::matmul(a, b); });
  fmt::print("  {} kernels: {}, threads: {}\n", sg::blas_library_name(), sg::blas_core_name(),
             sg::blas_threads());
  fmt::print("  naive loop: {:8.3f} ms  {:7.1f} GFLOP/s\n", t_naive * 1e3, flops / t_naive * 1e-9);
  fmt::print("  sg::matmul: {:8.3f} ms  {:7.1f} GFLOP/s   ({:.0f}x faster)\n", t_blas * 1e3,
             flops / t_blas * 1e-9, t_naive / t_blas);
  sg::Tensor c_ref = sg::from_vector(c_naive, {n, n});
  check(max_diff(c_blas, c_ref) < 1e-3, "both compute the same product (up to float rounding)");

  fmt::print("\n== 3. Transposed views reach BLAS without a copy\n");
  // a.t() has strides [1, n]: a column-major matrix, which BLAS reads with its "transpose" flag.
  sg::Tensor at = a.t();
  fmt::print("  a.t(): strides {}, contiguous {}\n", at.strides(), at.is_contiguous());
  double t_view = best_seconds(quick ? 5 : 20, [&] { (void)sg::matmul(at, b); });
  double t_copy = best_seconds(quick ? 5 : 20, [&] { (void)sg::matmul(at.contiguous(), b); });
  fmt::print("  matmul(a.t(), b): {:.3f} ms; with an explicit contiguous() copy first: {:.3f} ms\n",
             t_view * 1e3, t_copy * 1e3);
  check(max_diff(sg::matmul(at, b), sg::matmul(at.contiguous(), b)) < 1e-4, "same result");
}

void matmul_gradients() {
  fmt::print("\n== 4. Gradients: dA = G·Bᵀ, dB = Aᵀ·G\n");
  auto leaf = sg::TensorOptions(sg::kFloat64).requires_grad(true);
  sg::Tensor x = sg::randn({2, 3}, leaf), y = sg::randn({3, 4}, leaf);
  sg::Tensor G = sg::randn({2, 4}, sg::kFloat64);
  sg::matmul(x, y).backward(G);  // backpropagate G as the gradient of the product
  sg::Tensor dx = sg::matmul(G, y.detach().t()), dy = sg::matmul(x.detach().t(), G);
  fmt::print("x.grad() =\n{}\nG·yᵀ =\n{}\n", x.grad(), dx);
  check(max_diff(x.grad(), dx) < 1e-12 && max_diff(y.grad(), dy) < 1e-12, "the formulas hold");
  // Numerically, for one element: L(x) = Σ (x·y) ⊙ G, nudge x[1][2] by ±eps.
  const double eps = 1e-6;
  auto L = [&](double delta) {
    sg::NoGradGuard no_grad;
    sg::Tensor xp = x.detach().clone();
    xp.select(0, 1).select(0, 2).add_(delta);
    return (sg::matmul(xp, y.detach()) * G).sum().item<double>();
  };
  double numeric = (L(eps) - L(-eps)) / (2 * eps);
  fmt::print("  dL/dx[1][2]: analytic {:.8f}, central difference {:.8f}\n",
             x.grad().at<double>({1, 2}), numeric);
  check(std::abs(numeric - x.grad().at<double>({1, 2})) < 1e-6, "one element, by hand");
  // sg::gradcheck does that for every element; here on broadcast batches, [2, 2, 3] · [3, 4].
  auto mm = [](const std::vector<sg::Tensor>& in) { return sg::matmul(in[0], in[1]); };
  sg::GradcheckResult r = sg::gradcheck(mm, {sg::randn({2, 2, 3}, leaf), sg::randn({3, 4}, leaf)});
  check(r.ok, "gradcheck on a broadcast batch: dB sums over the batch");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = example::parse_args(argc, argv).quick;

  what_matmul_computes();
  why_blas(quick);
  matmul_gradients();

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
