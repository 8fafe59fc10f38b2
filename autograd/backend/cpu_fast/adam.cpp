// CPU Adam step: the whole update of one parameter in one pass over its four arrays.
//
// Written with tensor ops (nn/optim/adam.cpp before this kernel), one step is about ten kernels,
// each a pass over the parameter and most with a temporary; for the tiny copy-task model (88
// small parameters) that was ~1000 kernel calls per step. The arithmetic here is the same, in the
// same order and precision (scalars rounded to the parameter's dtype first, as the ops round
// them), so both give the same bits: torch.optim.Adam's
//   g = grad + wd · p (Adam)   or   p = p · (1 - lr · wd) (AdamW)
//   m = β1 · m + (1 - β1) · g,   v = β2 · v + (1 - β2) · g²
//   p = p - lr / (1 - β1^t) · m / (√v / √(1 - β2^t) + eps)
#include <cmath>

#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/backend/cpu_fast/parallel.h"

namespace sg::cpu {

namespace {

template <typename T>
void adam_typed(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                const Tensor& exp_avg_sq, double lr, double beta1, double beta2, double eps,
                double weight_decay, bool decoupled, int64_t step) {
  const int64_t n = param.numel();
  T* p = param.data_ptr<T>();
  const T* g = grad.data_ptr<T>();
  T* m = exp_avg.data_ptr<T>();
  T* v = exp_avg_sq.data_ptr<T>();
  const double bias_correction1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const T b1 = static_cast<T>(beta1), one_minus_b1 = static_cast<T>(1.0 - beta1);
  const T b2 = static_cast<T>(beta2), one_minus_b2 = static_cast<T>(1.0 - beta2);
  const T wd = static_cast<T>(weight_decay), decay = static_cast<T>(1.0 - lr * weight_decay);
  const T sqrt_bc2 = static_cast<T>(std::sqrt(bias_correction2));
  const T e = static_cast<T>(eps), step_size = static_cast<T>(-lr / bias_correction1);
  const bool coupled_decay = weight_decay != 0.0 && !decoupled;
  const bool decoupled_decay = weight_decay != 0.0 && decoupled;
  parallel_for(n, kParallelGrain, [&](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      T pi = p[i];
      if (decoupled_decay) pi = pi * decay;
      const T gi = coupled_decay ? g[i] + pi * wd : g[i];
      const T mi = m[i] * b1 + gi * one_minus_b1;
      const T vi = v[i] * b2 + (gi * gi) * one_minus_b2;
      const T denom = std::sqrt(vi) / sqrt_bc2 + e;
      m[i] = mi;
      v[i] = vi;
      p[i] = pi + (mi / denom) * step_size;
    }
  });
}

}  // namespace

bool FastCpuBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                                 const Tensor& exp_avg_sq, double lr, double beta1, double beta2,
                                 double eps, double weight_decay, bool decoupled_weight_decay,
                                 int64_t step) {
  if (param.dtype() != kFloat32) return false;  // float64: the update composed from ops
  adam_typed<float>(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay,
                    decoupled_weight_decay, step);
  return true;
}

}  // namespace sg::cpu
