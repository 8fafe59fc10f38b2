// CPU unary kernels: out = op(x) elementwise, each op's function object (elementwise_math.h, the
// math the GPU kernels share) in the loop of elementwise_loops.h: one loop per op, so it
// vectorises.
#include <algorithm>
#include <limits>
#include <string_view>
#include <type_traits>

#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu/elementwise_loops.h"
#include "autograd/backend/elementwise_math.h"

namespace sg::cpu {

namespace {

// A parameter as T, within T's range. For an integer T, max() as a double rounds up past it (2^63
// for int64), and converting a double beyond T's range is undefined: those become max().
template <typename T>
T parameter_as(double v, std::string_view op) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    SG_CHECK(v == v, "{}: NaN is not a parameter for {} tensors", op, dtype_of<T>::value);
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
      return std::numeric_limits<T>::lowest();
    }
    return static_cast<T>(v);
  }
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) {
  if (op == UnaryOp::LogicalNot) {
    return dispatch_dtype("logical_not", x.dtype(), [&]<typename T>() {
      map1<bool, T>(x, out, elementwise::LogicalNot<T>{});
    });
  }
  dispatch_dtype(op_name(op), x.dtype(), [&]<typename T>() {
    SG_CHECK(elementwise::unary_defined<T>(op), "{}: not defined for {} tensors", op_name(op),
             dtype_of<T>::value);
    // Clamp's bounds in T's range (±inf for a missing bound becomes the lowest / largest T), and
    // for integers any parameter: compared as doubles first, since a double beyond T's range has
    // no T value. Pow's float exponent stays as it is (x^inf is not x^FLT_MAX).
    constexpr auto lowest = static_cast<double>(std::numeric_limits<T>::lowest());
    constexpr auto largest = static_cast<double>(std::numeric_limits<T>::max());
    const bool clamp = op == UnaryOp::Clamp || !std::is_floating_point_v<T>;
    const T a = parameter_as<T>(clamp ? std::clamp(alpha, lowest, largest) : alpha, op_name(op));
    const T b = parameter_as<T>(clamp ? std::clamp(beta, lowest, largest) : beta, op_name(op));
    elementwise::with_unary<T>(op, a, b, [&](auto f) { map1<T, T>(x, out, f); });
  });
}

}  // namespace sg::cpu
