// CPU binary kernels: out = op(a, b) elementwise over operands broadcast to out's shape, in the
// loop of elementwise_loops.h. Comparisons and logic write bool.
#include <cmath>

#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu/elementwise_loops.h"
#include "autograd/backend/cpu/scalar_math.h"

namespace sg::cpu {

namespace {

template <typename T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  if constexpr (std::is_same_v<T, bool>) {
    // Only comparisons and logic take bool (the ops promote bool to int64 for arithmetic).
    switch (op) {
      case BinaryOp::Eq:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x == y; });
      case BinaryOp::Ne:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x != y; });
      case BinaryOp::LogicalAnd:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x && y; });
      case BinaryOp::LogicalOr:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x || y; });
      default:
        SG_FAIL("{}: not defined for bool tensors", op_name(op));
    }
  } else {
    switch (op) {
      case BinaryOp::Add:
        return map2<T, T>(a, b, out, [](T x, T y) { return T(x + y); });
      case BinaryOp::Sub:
        return map2<T, T>(a, b, out, [](T x, T y) { return T(x - y); });
      case BinaryOp::Mul:
        return map2<T, T>(a, b, out, [](T x, T y) { return T(x * y); });
      case BinaryOp::Maximum:
        return map2<T, T>(a, b, out, [](T x, T y) { return (is_nan(x) || x > y) ? x : y; });
      case BinaryOp::Minimum:
        return map2<T, T>(a, b, out, [](T x, T y) { return (is_nan(x) || x < y) ? x : y; });
      case BinaryOp::ReluGrad:  // a select, not a product (0 * inf would be NaN)
        return map2<T, T>(a, b, out, [](T g, T y) { return y <= T(0) ? T(0) : g; });
      case BinaryOp::Eq:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x == y; });
      case BinaryOp::Ne:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x != y; });
      case BinaryOp::Lt:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x < y; });
      case BinaryOp::Le:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x <= y; });
      case BinaryOp::Gt:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x > y; });
      case BinaryOp::Ge:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x >= y; });
      case BinaryOp::LogicalAnd:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x != T(0) && y != T(0); });
      case BinaryOp::LogicalOr:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x != T(0) || y != T(0); });
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case BinaryOp::Div:
          return map2<T, T>(a, b, out, [](T x, T y) { return x / y; });
        case BinaryOp::Pow:
          return map2<T, T>(a, b, out, [](T x, T y) { return std::pow(x, y); });
        default:
          break;
      }
    }
    SG_FAIL("{}: not defined for {} tensors", op_name(op), dtype_of<T>::value);
  }
}

}  // namespace

void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_dtype(op_name(op), a.dtype(), [&]<typename T>() { binary_typed<T>(op, a, b, out); });
}

}  // namespace sg::cpu
