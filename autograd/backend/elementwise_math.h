// The math of every elementwise op, written once for the CPU kernels (cpu/unary.cpp,
// cpu/binary.cpp) and the GPU's (cuda/elementwise.cu). Each op is a small function object whose
// call is host and device code at once; with_unary / with_arithmetic map an op's enum to its object
// and hand it to the caller's loop:
//   CPU  with_unary<T>(op, alpha, beta, [&](auto f) { map1<T, T>(x, out, f); });   // one loop
//        per op, the switch outside it, so the loop vectorises
//   GPU  with_unary<T>(op, alpha, beta, [v](auto f) { return f(v); })              // in the kernel
//        functor: one kernel per dtype, the switch inside (every thread takes the same branch)
// A new elementwise op is its enum and name (kernel_names.h), its object and case here, its op
// (ops.h, ops/unary.cpp or ops/binary.cpp) and its line in the tests' op table
// (tests/support/op_info.cpp) with its golden values (scripts/golden/<family>.py):
// docs/conventions.md.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "autograd/backend/kernel_names.h"

#if defined(__CUDACC__)
#define SG_HOST_DEVICE __host__ __device__
#else
#define SG_HOST_DEVICE
#endif

namespace sg::elementwise {

// ---- the math functions, on the host (the C++ library's) and on the device (CUDA's) ----
#if defined(__CUDA_ARCH__)
#define SG_MATH_1(name)                                               \
  __device__ inline float name##_of(float x) { return ::name##f(x); } \
  __device__ inline double name##_of(double x) { return ::name(x); }
SG_MATH_1(exp)
SG_MATH_1(log)
SG_MATH_1(sqrt)
SG_MATH_1(tanh)
SG_MATH_1(erf)
#undef SG_MATH_1
__device__ inline float pow_of(float x, float y) { return ::powf(x, y); }
__device__ inline double pow_of(double x, double y) { return ::pow(x, y); }
#else
template <typename T>
inline T exp_of(T x) {
  return std::exp(x);
}
template <typename T>
inline T log_of(T x) {
  return std::log(x);
}
template <typename T>
inline T sqrt_of(T x) {
  return std::sqrt(x);
}
template <typename T>
inline T tanh_of(T x) {
  return std::tanh(x);
}
template <typename T>
inline T erf_of(T x) {
  return std::erf(x);
}
template <typename T>
inline T pow_of(T x, T y) {
  return std::pow(x, y);
}
#endif

template <typename T>
SG_HOST_DEVICE constexpr bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

// Constants of the GELUs: 1/√2, 1/√(2π) and √(2/π).
inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;

// ---- unary: y = f(x) ----
template <typename T>
struct Neg {
  SG_HOST_DEVICE T operator()(T v) const { return static_cast<T>(-v); }
};
template <typename T>
struct Abs {
  SG_HOST_DEVICE T operator()(T v) const { return v < T(0) ? T(-v) : v; }
};
template <typename T>
struct Sign {
  SG_HOST_DEVICE T operator()(T v) const { return static_cast<T>((T(0) < v) - (v < T(0))); }
};
template <typename T>
struct Square {
  SG_HOST_DEVICE T operator()(T v) const { return static_cast<T>(v * v); }
};
template <typename T>
struct Relu {  // NaN stays NaN, as in PyTorch
  SG_HOST_DEVICE T operator()(T v) const { return v <= T(0) ? T(0) : v; }
};
template <typename T>
struct Clamp {  // min(max(v, lo), hi): NaN passes through, and lo > hi gives hi, as in PyTorch
  T lo, hi;
  SG_HOST_DEVICE T operator()(T v) const {
    const T r = v < lo ? lo : v;
    return r > hi ? hi : r;
  }
};
template <typename T>
struct Exp {
  SG_HOST_DEVICE T operator()(T v) const { return exp_of(v); }
};
template <typename T>
struct Log {
  SG_HOST_DEVICE T operator()(T v) const { return log_of(v); }
};
template <typename T>
struct Sqrt {
  SG_HOST_DEVICE T operator()(T v) const { return sqrt_of(v); }
};
template <typename T>
struct Rsqrt {
  SG_HOST_DEVICE T operator()(T v) const { return T(1) / sqrt_of(v); }
};
template <typename T>
struct Tanh {
  SG_HOST_DEVICE T operator()(T v) const { return tanh_of(v); }
};
template <typename T>
struct Sigmoid {  // two forms, so that exp never overflows: for x < 0, e^x / (1 + e^x)
  SG_HOST_DEVICE T operator()(T v) const {
    if (v >= T(0)) return T(1) / (T(1) + exp_of(-v));
    const T e = exp_of(v);
    return e / (T(1) + e);
  }
};
template <typename T>
struct Gelu {  // x Φ(x)
  SG_HOST_DEVICE T operator()(T v) const { return T(0.5) * v * (T(1) + erf_of(v * T(kInvSqrt2))); }
};
template <typename T>
struct GeluGrad {  // d/dx x Φ(x) = Φ(x) + x φ(x)
  SG_HOST_DEVICE T operator()(T v) const {
    const T cdf = T(0.5) * (T(1) + erf_of(v * T(kInvSqrt2)));
    const T pdf = exp_of(T(-0.5) * v * v) * T(kInvSqrt2Pi);
    return cdf + v * pdf;
  }
};
template <typename T>
struct GeluTanh {  // the tanh approximation: x (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2
  SG_HOST_DEVICE T operator()(T v) const {
    const T u = T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v);
    return T(0.5) * v * (T(1) + tanh_of(u));
  }
};
template <typename T>
struct GeluTanhGrad {
  SG_HOST_DEVICE T operator()(T v) const {
    const T u = T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v);
    const T th = tanh_of(u);
    return T(0.5) * (T(1) + th) +
           T(0.5) * v * (T(1) - th * th) * T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * v * v);
  }
};
template <typename T>
struct PowScalar {  // x^p; p = 2 as a product, exact
  T p;
  SG_HOST_DEVICE T operator()(T v) const { return p == T(2) ? v * v : pow_of(v, p); }
};
template <typename T>
struct LogicalNot {
  SG_HOST_DEVICE bool operator()(T v) const { return v == T(0); }
};

// Whether `op` is defined on elements of type T (the kernels refuse the rest with an error).
template <typename T>
constexpr bool unary_defined(UnaryOp op) {
  if (op == UnaryOp::LogicalNot) return true;
  if constexpr (std::is_same_v<T, bool>) return false;
  if constexpr (std::is_floating_point_v<T>) return true;
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::Square ||
         op == UnaryOp::Relu || op == UnaryOp::Clamp;
}

// use(f) with `op`'s function object for elements of type T (alpha: Pow's exponent, Clamp's low
// bound; beta: Clamp's high bound, both already in T's range). Every call of use must return the
// same type. `op` must be unary_defined<T> and not LogicalNot (which writes bool): anything else
// gets the identity, which the kernels never reach (they check first).
template <typename T, typename Use>
SG_HOST_DEVICE decltype(auto) with_unary(UnaryOp op, T alpha, T beta, Use&& use) {
  if constexpr (!std::is_same_v<T, bool>) {
    switch (op) {
      case UnaryOp::Neg:
        return use(Neg<T>{});
      case UnaryOp::Abs:
        return use(Abs<T>{});
      case UnaryOp::Sign:
        return use(Sign<T>{});
      case UnaryOp::Square:
        return use(Square<T>{});
      case UnaryOp::Relu:
        return use(Relu<T>{});
      case UnaryOp::Clamp:
        return use(Clamp<T>{alpha, beta});
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case UnaryOp::Exp:
          return use(Exp<T>{});
        case UnaryOp::Log:
          return use(Log<T>{});
        case UnaryOp::Sqrt:
          return use(Sqrt<T>{});
        case UnaryOp::Rsqrt:
          return use(Rsqrt<T>{});
        case UnaryOp::Tanh:
          return use(Tanh<T>{});
        case UnaryOp::Sigmoid:
          return use(Sigmoid<T>{});
        case UnaryOp::Gelu:
          return use(Gelu<T>{});
        case UnaryOp::GeluGrad:
          return use(GeluGrad<T>{});
        case UnaryOp::GeluTanh:
          return use(GeluTanh<T>{});
        case UnaryOp::GeluTanhGrad:
          return use(GeluTanhGrad<T>{});
        case UnaryOp::Pow:
          return use(PowScalar<T>{alpha});
        default:
          break;
      }
    }
  }
  return use(Neg<T>{});  // unreachable: the kernels check unary_defined<T> first
}

// ---- binary: y = f(a, b) ----
template <typename T>
struct Add {
  SG_HOST_DEVICE T operator()(T x, T y) const { return static_cast<T>(x + y); }
};
template <typename T>
struct Sub {
  SG_HOST_DEVICE T operator()(T x, T y) const { return static_cast<T>(x - y); }
};
template <typename T>
struct Mul {
  SG_HOST_DEVICE T operator()(T x, T y) const { return static_cast<T>(x * y); }
};
template <typename T>
struct Div {
  SG_HOST_DEVICE T operator()(T x, T y) const { return x / y; }
};
template <typename T>
struct Pow {
  SG_HOST_DEVICE T operator()(T x, T y) const { return pow_of(x, y); }
};
template <typename T>
struct Maximum {  // a NaN wins, as in PyTorch
  SG_HOST_DEVICE T operator()(T x, T y) const { return (is_nan(x) || x > y) ? x : y; }
};
template <typename T>
struct Minimum {
  SG_HOST_DEVICE T operator()(T x, T y) const { return (is_nan(x) || x < y) ? x : y; }
};
template <typename T>
struct ReluGrad {  // a select, not a product (0 · inf would be NaN)
  SG_HOST_DEVICE T operator()(T g, T y) const { return y <= T(0) ? T(0) : g; }
};
template <typename T>
struct Compare {  // comparisons and logic: bool
  BinaryOp op;
  SG_HOST_DEVICE bool operator()(T x, T y) const {
    switch (op) {
      case BinaryOp::Eq:
        return x == y;
      case BinaryOp::Ne:
        return x != y;
      case BinaryOp::Lt:
        return x < y;
      case BinaryOp::Le:
        return x <= y;
      case BinaryOp::Gt:
        return x > y;
      case BinaryOp::Ge:
        return x >= y;
      case BinaryOp::LogicalAnd:
        return x != T(0) && y != T(0);
      case BinaryOp::LogicalOr:
        return x != T(0) || y != T(0);
      default:
        return false;  // unreachable: only comparisons get here
    }
  }
};

// Whether `op` is defined on elements of type T: bool only compares and combines (the ops
// promote bool to int64 for arithmetic); int64 has no division or power.
template <typename T>
constexpr bool binary_defined(BinaryOp op) {
  if constexpr (std::is_same_v<T, bool>) {
    return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::LogicalAnd ||
           op == BinaryOp::LogicalOr;
  }
  if constexpr (std::is_floating_point_v<T>) return true;
  return op != BinaryOp::Div && op != BinaryOp::Pow;
}

// use(f) with arithmetic `op`'s function object (T in, T out). `op` must be binary_defined<T>
// and not a comparison (Compare<T>{op} is theirs).
template <typename T, typename Use>
SG_HOST_DEVICE decltype(auto) with_arithmetic(BinaryOp op, Use&& use) {
  switch (op) {
    case BinaryOp::Add:
      return use(Add<T>{});
    case BinaryOp::Sub:
      return use(Sub<T>{});
    case BinaryOp::Mul:
      return use(Mul<T>{});
    case BinaryOp::Maximum:
      return use(Maximum<T>{});
    case BinaryOp::Minimum:
      return use(Minimum<T>{});
    case BinaryOp::ReluGrad:
      return use(ReluGrad<T>{});
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case BinaryOp::Div:
        return use(Div<T>{});
      case BinaryOp::Pow:
        return use(Pow<T>{});
      default:
        break;
    }
  }
  return use(Add<T>{});  // unreachable: the kernels check binary_defined<T> first
}

}  // namespace sg::elementwise
