// CPU binary kernels: out = op(a, b) elementwise over operands broadcast to out's shape, each op's
// function object (elementwise_math.h, the math the GPU kernels share) in the loop of
// elementwise_loops.h. Comparisons and logic write bool.
#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu/elementwise_loops.h"
#include "autograd/backend/elementwise_math.h"

namespace sg::cpu {

void CpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_dtype(op_name(op), a.dtype(), [&]<typename T>() {
    SG_CHECK(elementwise::binary_defined<T>(op), "{}: not defined for {} tensors", op_name(op),
             dtype_of<T>::value);
    if (is_comparison(op)) {
      return map2<bool, T>(a, b, out, elementwise::Compare<T>{op});
    }
    elementwise::with_arithmetic<T>(op, [&](auto f) { map2<T, T>(a, b, out, f); });
  });
}

}  // namespace sg::cpu
