// How close a bfloat16 product (autocast's gemm_bfloat16, any backend) must be to the exact product
// of the same rounded operands. Each product of two bfloat16 values is exact in float32 (8
// significant bits times 8 fit in 24), so the only error is float32 rounding while summing the
// K products (and c, with accumulate): for ANY order or tree of summation (a kernel's register
// lanes, pairs of vdpbf16ps, blocks of K) the standard bound is
//   |computed - exact| <= γ(n) · (Σ_k |a_ik b_kj| + |c_ij|),   γ(n) = n u / (1 - n u),  u = 2^-24,
// with n = K + 1 terms (N. Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §4.2).
// So two kernels that agree with it agree with each other to twice that: "the same bfloat16
// inputs, float32 rounding of the sum". A kernel that rounded an operand differently (truncation,
// a wrong pair) is off by about 2^-9 of a product, far outside it for the K of these tests.
//
//   EXPECT_TRUE(within_float32_summation(out, rounded(a), rounded(b)));
#pragma once

#include <cmath>
#include <vector>

#include "tests/support/reference_gemm.h"
#include "tests/support/testing.h"

namespace sg::testing {

// x rounded to bfloat16, as a float32 tensor (what a product under autocast reads).
inline Tensor bfloat16_rounded(const Tensor& x) { return x.to(kBFloat16).to(kFloat32); }

// actual [.., M, N] against a [.., M, K] · b [.., K, N] (+ c, shaped like actual) computed exactly
// in float64, within `factor` times the bound above; a and b hold the rounded operands. (GPU tensor
// cores align and truncate their partial sums, so their tests allow a few times the bound.)
inline ::testing::AssertionResult within_float32_summation(const Tensor& actual, const Tensor& a,
                                                           const Tensor& b,
                                                           const Tensor& c = Tensor(),
                                                           double factor = 1.0) {
  const Tensor a64 = a.to(kCPU).to(kFloat64), b64 = b.to(kCPU).to(kFloat64);
  Tensor exact = reference_matmul(a64, b64);
  Tensor magnitude = reference_matmul(a64.abs(), b64.abs());
  if (c.defined()) {
    exact = exact + c.to(kCPU).to(kFloat64);
    magnitude = magnitude + c.to(kCPU).to(kFloat64).abs();
  }
  if (actual.shape() != exact.shape()) {
    return ::testing::AssertionFailure() << "shape " << fmt::format("{}", actual.shape()) << " vs "
                                         << fmt::format("{}", exact.shape());
  }
  const double n = static_cast<double>(a.size(-1) + 1), u = std::ldexp(1.0, -24);
  const double gamma = factor * n * u / (1 - n * u);
  const std::vector<double> got = actual.to_vector<double>(), want = exact.to_vector<double>(),
                            scale = magnitude.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(got[i] - want[i]), bound = gamma * scale[i];
    if (!(error <= bound)) {  // a NaN fails too
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << " vs exact " << want[i] << " (error " << error
             << " > bound " << bound << ", K = " << a.size(-1) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace sg::testing
