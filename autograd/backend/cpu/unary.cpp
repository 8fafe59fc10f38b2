// CPU unary kernels: out = op(x) elementwise, each op's function object (elementwise_math.h, the
// math the GPU kernels share) in the loop of elementwise_loops.h: one loop per op, so it
// vectorises.
#include <algorithm>
#include <limits>

#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu/elementwise_loops.h"
#include "autograd/backend/elementwise_math.h"

namespace sg::cpu {

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
    const T a = static_cast<T>(clamp ? std::clamp(alpha, lowest, largest) : alpha);
    const T b = static_cast<T>(clamp ? std::clamp(beta, lowest, largest) : beta);
    elementwise::with_unary<T>(op, a, b, [&](auto f) { map1<T, T>(x, out, f); });
  });
}

}  // namespace sg::cpu
