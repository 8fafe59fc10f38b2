// CPU random numbers: element i of out is uniform_at(state, i + 1) (autograd/generator.h), the
// number the i-th call of Generator::next_uniform() would give, so every device and every split
// of the work draws the same tensor.
#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/generator.h"

namespace sg::cpu {

void CpuBackend::uniform(const Tensor& out, uint64_t state) {
  dispatch_floating("uniform", out.dtype(), [&]<typename T>() {
    T* o = out.data_ptr<T>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      o[i] = static_cast<T>(uniform_at(state, static_cast<uint64_t>(i) + 1));
    }
  });
}

}  // namespace sg::cpu
