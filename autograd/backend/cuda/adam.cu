// CUDA Adam step: the whole update of one parameter in one pass over its four arrays. The CUDA
// twin of cpu_fast/adam.cpp, with the same arithmetic in the same order and precision (the scalars
// are rounded to the parameter's dtype on the host first), so both follow torch.optim.Adam:
//   g = grad + wd · p (Adam)   or   p = p · (1 - lr · wd) (AdamW)
//   m = β1 · m + (1 - β1) · g,   v = β2 · v + (1 - β2) · g²
//   p = p - lr / (1 - β1^t) · m / (√v / √(1 - β2^t) + eps)
// Composed from tensor ops, one step is about ten kernel launches per parameter; for a small
// model the launches, not the arithmetic, are the cost.
#include <cmath>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"

namespace sg::cuda {

namespace {

template <typename T>
struct AdamScalars {
  T beta1, one_minus_beta1, beta2, one_minus_beta2;
  T weight_decay, decay;                    // decay = 1 - lr · wd (AdamW)
  T sqrt_bias_correction2, eps, step_size;  // step_size = -lr / (1 - β1^t)
  bool coupled_decay, decoupled_decay;
};

template <typename T>
__global__ void adam_kernel(T* p, const T* g, T* m, T* v, int64_t n, AdamScalars<T> s) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    T pi = p[i];
    if (s.decoupled_decay) pi = pi * s.decay;
    const T gi = s.coupled_decay ? g[i] + pi * s.weight_decay : g[i];
    const T mi = m[i] * s.beta1 + gi * s.one_minus_beta1;
    const T vi = v[i] * s.beta2 + (gi * gi) * s.one_minus_beta2;
    const T denom = dev_sqrt(vi) / s.sqrt_bias_correction2 + s.eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi + (mi / denom) * s.step_size;
  }
}

}  // namespace

bool CudaBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                              const Tensor& exp_avg_sq, double lr, double beta1, double beta2,
                              double eps, double weight_decay, bool decoupled_weight_decay,
                              int64_t step) {
  Scope scope(*this);
  const int64_t n = param.numel();
  if (n == 0) return true;
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  dispatch_floating("adam_update_", param.dtype(), [&]<typename T>() {
    const AdamScalars<T> s{static_cast<T>(beta1),
                           static_cast<T>(1.0 - beta1),
                           static_cast<T>(beta2),
                           static_cast<T>(1.0 - beta2),
                           static_cast<T>(weight_decay),
                           static_cast<T>(1.0 - lr * weight_decay),
                           static_cast<T>(std::sqrt(bias_correction2)),
                           static_cast<T>(eps),
                           static_cast<T>(-lr / bias_correction1),
                           weight_decay != 0.0 && !decoupled_weight_decay,
                           weight_decay != 0.0 && decoupled_weight_decay};
    adam_kernel<<<grid_for(n), kBlockSize>>>(param.data_ptr<T>(), grad.data_ptr<T>(),
                                             exp_avg.data_ptr<T>(), exp_avg_sq.data_ptr<T>(), n, s);
    SG_CUDA_CHECK_LAUNCH();
  });
  return true;
}

}  // namespace sg::cuda
