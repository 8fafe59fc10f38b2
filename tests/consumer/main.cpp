// Uses scratchgrad through its installed headers and libraries: a matmul (OpenBLAS), an nn
// initialiser, a backward pass, and the training toolkit (scratchgrad::train, with nlohmann_json).
// tests/consumer/run_test.cmake checks what it prints.
#include <iostream>
#include <vector>

#include "nn/nn.h"
#include "train/history.h"

namespace {

void print_values(const char* name, const sg::Tensor& t) {
  std::cout << name << " =";
  for (float v : t.to_vector<float>()) std::cout << ' ' << v;
  std::cout << '\n';
}

}  // namespace

int main() {
  // y = sum(x @ w) with w = 0.5 everywhere: y = 0.5 * 2 * (1 + ... + 6) = 21,
  // dy/dx = row sums of w = 1, dy/dw[k][j] = column sums of x = 5, 7, 9.
  auto x =
      sg::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, sg::TensorOptions().requires_grad(true));
  auto w = sg::empty({3, 2});
  sg::nn::init::constant_(w, 0.5);
  w.requires_grad_();

  auto y = x.matmul(w).sum();
  y.backward();

  std::cout << "y = " << y.item<float>() << '\n';
  print_values("x.grad", x.grad());
  print_values("w.grad", w.grad());
  sg::train::History history;
  history.losses.push_back(y.item<float>());
  std::cout << "history = " << history.to_json() << '\n';
  return 0;
}
