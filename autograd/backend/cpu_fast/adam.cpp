// CPU Adam step: the whole update of a parameter in one pass over its four arrays, and of all the
// parameters of a step in one job for the pool (adam_update_foreach, torch.optim.Adam's
// foreach=True): one parallel_for over their elements laid end to end.
//
// Written with tensor ops (nn/optim/adam.cpp before this kernel), one step is about ten kernels,
// each a pass over the parameter and most with a temporary; for the tiny copy-task model (88
// small parameters) that was ~1000 kernel calls per step. The arithmetic here is the same, in the
// same order and precision (scalars rounded to the parameter's dtype first, as the ops round
// them), so both give the same bits: torch.optim.Adam's
//   g = grad + wd · p (Adam)   or   p = p · (1 - lr · wd) (AdamW)
//   m = β1 · m + (1 - β1) · g,   v = β2 · v + (1 - β2) · g²
//   p = p - lr / (1 - β1^t) · m / (√v / √(1 - β2^t) + eps)
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/backend/cpu_fast/parallel.h"

namespace sg::cpu {

namespace {

// One parameter's arrays and its step's constants, rounded to the parameter's dtype as the ops
// round them.
template <typename T>
struct AdamArrays {
  T* p;
  const T* g;
  T* m;
  T* v;
  T step_size, sqrt_bc2, decay;
};

// The update of elements [lo, hi) of one parameter.
template <typename T>
void adam_elements(const AdamArrays<T>& a, int64_t lo, int64_t hi, T b1, T one_minus_b1, T b2,
                   T one_minus_b2, T wd, T e, bool coupled_decay, bool decoupled_decay) {
  T* p = a.p;
  const T* g = a.g;
  T* m = a.m;
  T* v = a.v;
#pragma omp simd
  for (int64_t i = lo; i < hi; ++i) {
    T pi = p[i];
    if (decoupled_decay) pi = pi * a.decay;
    const T gi = coupled_decay ? g[i] + pi * wd : g[i];
    const T mi = m[i] * b1 + gi * one_minus_b1;
    const T vi = v[i] * b2 + (gi * gi) * one_minus_b2;
    const T denom = std::sqrt(vi) / a.sqrt_bc2 + e;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi + (mi / denom) * a.step_size;
  }
}

// Every parameter's elements as one range for the pool: element j of parameter t is index
// start[t] + j, so a grain may span the end of one parameter and the start of the next, and the
// 88 small parameters of the tiny model are one job rather than 88.
template <typename T>
void adam_foreach_typed(const std::vector<Backend::AdamTensors>& parameters, double beta1,
                        double beta2, double eps, double weight_decay, bool decoupled) {
  std::vector<AdamArrays<T>> arrays;
  std::vector<int64_t> start{0};
  for (const Backend::AdamTensors& t : parameters) {
    arrays.push_back({t.param.data_ptr<T>(), t.grad.data_ptr<T>(), t.exp_avg.data_ptr<T>(),
                      t.exp_avg_sq.data_ptr<T>(), static_cast<T>(t.scalars.step_size),
                      static_cast<T>(t.scalars.sqrt_bias_correction2),
                      static_cast<T>(t.scalars.decay)});
    start.push_back(start.back() + t.param.numel());
  }
  const T b1 = static_cast<T>(beta1), one_minus_b1 = static_cast<T>(1.0 - beta1);
  const T b2 = static_cast<T>(beta2), one_minus_b2 = static_cast<T>(1.0 - beta2);
  const T wd = static_cast<T>(weight_decay), e = static_cast<T>(eps);
  const bool coupled_decay = weight_decay != 0.0 && !decoupled;
  const bool decoupled_decay = weight_decay != 0.0 && decoupled;
  parallel_for(start.back(), kParallelGrain, [&](int64_t lo, int64_t hi) {
    // The parameter holding index lo, then each one the range reaches.
    auto t =
        static_cast<size_t>(std::upper_bound(start.begin(), start.end(), lo) - start.begin()) - 1;
    for (; lo < hi; ++t) {
      const int64_t end = std::min(hi, start[t + 1]);
      adam_elements(arrays[t], lo - start[t], end - start[t], b1, one_minus_b1, b2, one_minus_b2,
                    wd, e, coupled_decay, decoupled_decay);
      lo = end;
    }
  });
}

}  // namespace

bool FastCpuBackend::adam_update_foreach(const std::vector<AdamTensors>& parameters, double beta1,
                                         double beta2, double eps, double weight_decay,
                                         bool decoupled_weight_decay) {
  for (const AdamTensors& t : parameters) {
    if (t.param.dtype() != kFloat32) return false;  // float64: the update composed from ops
    if (t.step_scalars.defined()) return false;     // only a CUDA graph reads them on the device
  }
  adam_foreach_typed<float>(parameters, beta1, beta2, eps, weight_decay, decoupled_weight_decay);
  return true;
}

bool FastCpuBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                                 const Tensor& exp_avg_sq, double lr, double beta1, double beta2,
                                 double eps, double weight_decay, bool decoupled_weight_decay,
                                 int64_t step) {
  return adam_update_foreach(
      {{param, grad, exp_avg, exp_avg_sq, adam_step_scalars(lr, beta1, beta2, weight_decay, step)}},
      beta1, beta2, eps, weight_decay, decoupled_weight_decay);
}

}  // namespace sg::cpu
