// CPU unary kernels: out = op(x) elementwise, one scalar function per op (scalar_math.h) in the
// loop of elementwise_loops.h.
#include <algorithm>
#include <limits>

#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu/elementwise_loops.h"
#include "autograd/backend/cpu/scalar_math.h"

namespace sg::cpu {

namespace {

template <typename T>
void unary_typed(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) {
  if constexpr (std::is_same_v<T, bool>) {
    SG_FAIL("{}: not defined for bool tensors", op_name(op));
  } else {
    // Ops defined on integers too.
    switch (op) {
      case UnaryOp::Neg:
        return map1<T, T>(x, out, [](T v) { return static_cast<T>(-v); });
      case UnaryOp::Abs:
        return map1<T, T>(x, out, [](T v) { return v < T(0) ? T(-v) : v; });
      case UnaryOp::Sign:
        return map1<T, T>(x, out, [](T v) { return sign_of(v); });
      case UnaryOp::Square:
        return map1<T, T>(x, out, [](T v) { return static_cast<T>(v * v); });
      case UnaryOp::Relu:
        return map1<T, T>(x, out, [](T v) { return v <= T(0) ? T(0) : v; });  // NaN stays NaN
      case UnaryOp::Clamp: {
        // NaN passes through, as in PyTorch.
        T lo =
            static_cast<T>(std::max(alpha, static_cast<double>(std::numeric_limits<T>::lowest())));
        T hi = static_cast<T>(std::min(beta, static_cast<double>(std::numeric_limits<T>::max())));
        // min(max(v, lo), hi): when lo > hi everything becomes hi, as in PyTorch.
        return map1<T, T>(x, out, [lo, hi](T v) {
          T r = v < lo ? lo : v;
          return r > hi ? hi : r;
        });
      }
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case UnaryOp::Exp:
          return map1<T, T>(x, out, [](T v) { return std::exp(v); });
        case UnaryOp::Log:
          return map1<T, T>(x, out, [](T v) { return std::log(v); });
        case UnaryOp::Sqrt:
          return map1<T, T>(x, out, [](T v) { return std::sqrt(v); });
        case UnaryOp::Rsqrt:
          return map1<T, T>(x, out, [](T v) { return T(1) / std::sqrt(v); });
        case UnaryOp::Tanh:
          return map1<T, T>(x, out, [](T v) { return std::tanh(v); });
        case UnaryOp::Sigmoid:
          return map1<T, T>(x, out, [](T v) { return sigmoid(v); });
        case UnaryOp::Gelu:
          return map1<T, T>(x, out, [](T v) { return gelu_erf(v); });
        case UnaryOp::GeluTanh:
          return map1<T, T>(x, out, [](T v) { return gelu_tanh(v); });
        case UnaryOp::GeluGrad:
          return map1<T, T>(x, out, [](T v) { return gelu_erf_grad(v); });
        case UnaryOp::GeluTanhGrad:
          return map1<T, T>(x, out, [](T v) { return gelu_tanh_grad(v); });
        case UnaryOp::Pow: {
          T p = static_cast<T>(alpha);
          if (alpha == 2.0) return map1<T, T>(x, out, [](T v) { return v * v; });
          return map1<T, T>(x, out, [p](T v) { return std::pow(v, p); });
        }
        default:
          break;
      }
    }
    SG_FAIL("{}: not defined for {} tensors", op_name(op), dtype_of<T>::value);
  }
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) {
  if (op == UnaryOp::LogicalNot) {
    return dispatch_dtype("logical_not", x.dtype(), [&]<typename T>() {
      map1<bool, T>(x, out, [](T v) { return v == T(0); });
    });
  }
  dispatch_dtype(op_name(op), x.dtype(),
                 [&]<typename T>() { unary_typed<T>(op, x, out, alpha, beta); });
}

}  // namespace sg::cpu
