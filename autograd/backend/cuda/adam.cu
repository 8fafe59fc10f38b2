// CUDA Adam step: the whole update of one parameter in one pass over its four arrays. The CUDA
// twin of cpu_fast/adam.cpp, with the same arithmetic in the same order and precision (the scalars
// are rounded to the parameter's dtype on the host first), so both follow torch.optim.Adam:
//   g = grad + wd · p (Adam)   or   p = p · (1 - lr · wd) (AdamW)
//   m = β1 · m + (1 - β1) · g,   v = β2 · v + (1 - β2) · g²
//   p = p - lr / (1 - β1^t) · m / (√v / √(1 - β2^t) + eps)
// Composed from tensor ops, one step is about ten kernel launches per parameter; for a small
// model the launches, not the arithmetic, are the cost.
#include <cmath>

#include "autograd/backend/adam_step_scalars.h"
#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/backend/elementwise_math.h"

namespace sg::cuda {

namespace {

// The step's constants; what changes between steps (AdamStepScalars: the step size, the second
// bias correction, AdamW's decay) comes by value (eager) or from the device (a CUDA graph).
template <typename T>
struct AdamScalars {
  T beta1, one_minus_beta1, beta2, one_minus_beta2, weight_decay, eps;
  bool coupled_decay, decoupled_decay;
};

template <typename T>
AdamScalars<T> adam_scalars(double beta1, double beta2, double eps, double weight_decay,
                            bool decoupled_weight_decay) {
  return {static_cast<T>(beta1),
          static_cast<T>(1.0 - beta1),
          static_cast<T>(beta2),
          static_cast<T>(1.0 - beta2),
          static_cast<T>(weight_decay),
          static_cast<T>(eps),
          weight_decay != 0.0 && !decoupled_weight_decay,
          weight_decay != 0.0 && decoupled_weight_decay};
}

// step: the AdamStepScalars, by value or read from the device (both rounded to T the same way).
template <typename T>
__global__ void adam_kernel(T* p, const T* g, T* m, T* v, int64_t n, AdamScalars<T> s,
                            AdamStepScalars by_value, const double* on_device) {
  const AdamStepScalars step =
      on_device != nullptr ? AdamStepScalars{on_device[0], on_device[1], on_device[2]} : by_value;
  const T step_size = static_cast<T>(step.step_size);
  const T sqrt_bias_correction2 = static_cast<T>(step.sqrt_bias_correction2);
  const T decay = static_cast<T>(step.decay);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    T pi = p[i];
    if (s.decoupled_decay) pi = pi * decay;
    const T gi = s.coupled_decay ? g[i] + pi * s.weight_decay : g[i];
    const T mi = m[i] * s.beta1 + gi * s.one_minus_beta1;
    const T vi = v[i] * s.beta2 + (gi * gi) * s.one_minus_beta2;
    const T denom = elementwise::sqrt_of(vi) / sqrt_bias_correction2 + s.eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi + (mi / denom) * step_size;
  }
}

void launch_adam(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, double beta1, double beta2, double eps,
                 double weight_decay, bool decoupled_weight_decay, AdamStepScalars by_value,
                 const double* on_device) {
  const int64_t n = param.numel();
  if (n == 0) return;
  dispatch_floating("adam_update_", param.dtype(), [&]<typename T>() {
    adam_kernel<<<grid_for(n), kBlockSize, 0, launch_stream()>>>(
        param.data_ptr<T>(), grad.data_ptr<T>(), exp_avg.data_ptr<T>(), exp_avg_sq.data_ptr<T>(), n,
        adam_scalars<T>(beta1, beta2, eps, weight_decay, decoupled_weight_decay), by_value,
        on_device);
    SG_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

bool CudaBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                              const Tensor& exp_avg_sq, double lr, double beta1, double beta2,
                              double eps, double weight_decay, bool decoupled_weight_decay,
                              int64_t step) {
  Scope scope(*this);
  launch_adam(param, grad, exp_avg, exp_avg_sq, beta1, beta2, eps, weight_decay,
              decoupled_weight_decay, adam_step_scalars(lr, beta1, beta2, weight_decay, step),
              nullptr);
  return true;
}

bool CudaBackend::adam_update_from_device(const Tensor& param, const Tensor& grad,
                                          const Tensor& exp_avg, const Tensor& exp_avg_sq,
                                          const Tensor& step_scalars, double beta1, double beta2,
                                          double eps, double weight_decay,
                                          bool decoupled_weight_decay) {
  Scope scope(*this);
  launch_adam(param, grad, exp_avg, exp_avg_sq, beta1, beta2, eps, weight_decay,
              decoupled_weight_decay, AdamStepScalars{}, step_scalars.data_ptr<double>());
  return true;
}

}  // namespace sg::cuda
