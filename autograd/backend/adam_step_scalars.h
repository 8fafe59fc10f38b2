// What one Adam step needs besides its constant options, from the lr and the step count t:
// computed on the host, the same way for every backend, so that an eager step and a replayed CUDA
// graph (whose kernels read these from the device, cuda_graph.h) round alike.
#pragma once

#include <cmath>
#include <cstdint>

namespace sg {

struct AdamStepScalars {
  double step_size;              // -lr / (1 - β1^t)
  double sqrt_bias_correction2;  // √(1 - β2^t)
  double decay;                  // 1 - lr · weight_decay: AdamW's shrink of the parameter
};

inline AdamStepScalars adam_step_scalars(double lr, double beta1, double beta2, double weight_decay,
                                         int64_t step) {
  const double t = static_cast<double>(step);
  const double bias_correction1 = 1.0 - std::pow(beta1, t);
  const double bias_correction2 = 1.0 - std::pow(beta2, t);
  return {-lr / bias_correction1, std::sqrt(bias_correction2), 1.0 - lr * weight_decay};
}

}  // namespace sg
