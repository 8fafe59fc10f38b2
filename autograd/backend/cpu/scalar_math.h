// The scalar functions of the unary and binary kernels (unary.cpp, binary.cpp): GELU in both
// forms and their derivatives, a sigmoid that never overflows, sign, NaN tests that compile for
// integers too, and the type a sum accumulates in (reduce.cpp, both backends).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <type_traits>

namespace sg::cpu {

template <typename T>
constexpr bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// Float sums accumulate in double, integer sums in int64 (docs/design.md).
template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <typename T>
constexpr T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2)));
}
template <typename T>
constexpr T gelu_erf_grad(T x) {
  // d/dx x Φ(x) = Φ(x) + x φ(x)
  T cdf = T(0.5) * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2)));
  T pdf = std::exp(T(-0.5) * x * x) * T(0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2);
  return cdf + x * pdf;
}
template <typename T>
constexpr T gelu_tanh(T x) {
  T u = T(std::numbers::sqrt2 * std::numbers::inv_sqrtpi) * (x + T(0.044715) * x * x * x);
  return T(0.5) * x * (T(1) + std::tanh(u));
}
template <typename T>
constexpr T gelu_tanh_grad(T x) {
  constexpr T k = T(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2/pi)
  T u = k * (x + T(0.044715) * x * x * x);
  T th = std::tanh(u);
  return T(0.5) * (T(1) + th) +
         T(0.5) * x * (T(1) - th * th) * k * (T(1) + T(3 * 0.044715) * x * x);
}
template <typename T>
constexpr T sigmoid(T x) {
  // Two forms so exp never overflows: for x < 0, e^x / (1 + e^x).
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}
template <typename T>
constexpr T sign_of(T x) {
  return static_cast<T>((T(0) < x) - (x < T(0)));
}

}  // namespace sg::cpu
