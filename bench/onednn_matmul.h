// oneDNN's bfloat16 matrix product (Debian's libdnnl-dev 2.6), the anchor the AVX512-BF16 kernel
// of autocast is measured against in bench_matmul --bf16: oneDNN's matmul is what PyTorch's CPU
// autocast runs. Built only where CMake finds oneDNN (docs/design.md, "Benchmarks against
// oneDNN"); has_onednn() says whether this build has it.
//
//   OneDnnBf16Matmul mm(M, N, K, /*b_transposed=*/true);
//   mm.convert_inputs(a, b);   // float32 -> bfloat16 (a reorder each), what a cast costs
//   mm.multiply();             // c [M, N] float32 = a·b from the bfloat16 copies
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace sg::bench {

bool has_onednn();
std::string onednn_version();  // "2.6.3", or "" without oneDNN

class OneDnnBf16Matmul {
 public:
  // a [M, K] in rows, b [K, N] in rows or (b_transposed) stored [N, K] (a Linear layer's weight).
  OneDnnBf16Matmul(int64_t M, int64_t N, int64_t K, bool b_transposed, int threads);
  ~OneDnnBf16Matmul();
  OneDnnBf16Matmul(const OneDnnBf16Matmul&) = delete;
  OneDnnBf16Matmul& operator=(const OneDnnBf16Matmul&) = delete;

  void convert_inputs(const float* a, const float* b);
  void multiply();
  const float* result() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace sg::bench
