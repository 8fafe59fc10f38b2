// CUDA Adam step: the whole update of one parameter in one pass over its four arrays. The CUDA
// twin of cpu_fast/adam.cpp, with the same arithmetic in the same order and precision (the scalars
// are rounded to the parameter's dtype on the host first), so both follow torch.optim.Adam:
//   g = grad + wd · p (Adam)   or   p = p · (1 - lr · wd) (AdamW)
//   m = β1 · m + (1 - β1) · g,   v = β2 · v + (1 - β2) · g²
//   p = p - lr / (1 - β1^t) · m / (√v / √(1 - β2^t) + eps)
// Composed from tensor ops, one step is about ten kernel launches per parameter; for a small
// model the launches, not the arithmetic, are the cost: adam_update_foreach steps every parameter
// of a model in one launch.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "autograd/backend/adam_step_scalars.h"
#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/backend/elementwise_math.h"
#include "autograd/factory.h"

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

// The update of element i: one place for the arithmetic of both kernels below, so that one
// parameter stepped alone and stepped with the others get the same bits.
template <typename T>
__device__ inline void adam_element(T* p, const T* g, T* m, T* v, int64_t i,
                                    const AdamScalars<T>& s, T step_size, T sqrt_bias_correction2,
                                    T decay) {
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
    adam_element(p, g, m, v, i, s, step_size, sqrt_bias_correction2, decay);
  }
}

// ---- many parameters in one launch (adam_update_foreach) ----

// The parameters are cut into chunks of at most kAdamChunk elements, one block per chunk: a
// small model's hundred parameters are one kernel instead of a hundred (even a CUDA graph pays
// for each launch it replays, and a small parameter is far less work than that).
inline constexpr int64_t kAdamChunk = 16384;

template <typename T>
struct AdamChunk {
  T* p;
  const T* g;
  T* m;
  T* v;
  int64_t n;              // elements in this chunk
  const double* scalars;  // its parameter's AdamStepScalars, on the device
};

template <typename T>
__global__ void adam_foreach_kernel(const AdamChunk<T>* chunks, AdamScalars<T> s) {
  const AdamChunk<T> c = chunks[blockIdx.x];
  const T step_size = static_cast<T>(c.scalars[0]);
  const T sqrt_bias_correction2 = static_cast<T>(c.scalars[1]);
  const T decay = static_cast<T>(c.scalars[2]);
  for (int64_t i = threadIdx.x; i < c.n; i += blockDim.x) {
    adam_element(c.p, c.g, c.m, c.v, i, s, step_size, sqrt_bias_correction2, decay);
  }
}

// One launch for the parameters of dtype T: the chunk table, and the step scalars of the
// parameters that bring them by value, go to the device in one upload (inside a CUDA graph
// capture the upload becomes part of the graph).
template <typename T>
void launch_adam_foreach(const std::vector<const Backend::AdamTensors*>& parameters,
                         AdamScalars<T> s, const Device& device) {
  std::vector<double> by_value;  // 3 per parameter without step_scalars
  for (const Backend::AdamTensors* t : parameters) {
    if (!t->step_scalars.defined()) {
      by_value.insert(by_value.end(),
                      {t->scalars.step_size, t->scalars.sqrt_bias_correction2, t->scalars.decay});
    }
  }
  int64_t chunk_count = 0;
  for (const Backend::AdamTensors* t : parameters)
    chunk_count += ceil_div(t->param.numel(), kAdamChunk);
  if (chunk_count == 0) return;
  static_assert(sizeof(AdamChunk<T>) % sizeof(double) == 0);
  const size_t chunk_bytes = static_cast<size_t>(chunk_count) * sizeof(AdamChunk<T>);
  const size_t bytes = chunk_bytes + by_value.size() * sizeof(double);
  Tensor table =
      empty({static_cast<int64_t>(bytes / sizeof(double))}, TensorOptions(kFloat64).device(device));
  auto* device_base = static_cast<char*>(table.raw_data());
  const auto* device_by_value = reinterpret_cast<const double*>(device_base + chunk_bytes);
  std::vector<char> host(bytes);
  auto* chunks = reinterpret_cast<AdamChunk<T>*>(host.data());
  int64_t c = 0, value_row = 0;
  for (const Backend::AdamTensors* t : parameters) {
    const double* scalars = t->step_scalars.defined() ? t->step_scalars.template data_ptr<double>()
                                                      : device_by_value + 3 * value_row++;
    const int64_t n = t->param.numel();
    for (int64_t start = 0; start < n; start += kAdamChunk) {
      chunks[c++] = {
          t->param.template data_ptr<T>() + start,   t->grad.template data_ptr<T>() + start,
          t->exp_avg.template data_ptr<T>() + start, t->exp_avg_sq.template data_ptr<T>() + start,
          std::min(kAdamChunk, n - start),           scalars};
    }
  }
  std::memcpy(host.data() + chunk_bytes, by_value.data(), by_value.size() * sizeof(double));
  backend_for(device).copy_from_host(device_base, host.data(), bytes);
  adam_foreach_kernel<<<static_cast<unsigned>(chunk_count), kBlockSize, 0, launch_stream()>>>(
      reinterpret_cast<const AdamChunk<T>*>(device_base), s);
  SG_CUDA_CHECK_LAUNCH();
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

bool CudaBackend::adam_update_foreach(const std::vector<AdamTensors>& parameters, double beta1,
                                      double beta2, double eps, double weight_decay,
                                      bool decoupled_weight_decay) {
  Scope scope(*this);
  std::vector<const AdamTensors*> float32, float64;
  for (const AdamTensors& t : parameters) {
    if (t.param.dtype() == kFloat32) {
      float32.push_back(&t);
    } else if (t.param.dtype() == kFloat64) {
      float64.push_back(&t);
    } else {
      return false;  // the op checked the dtypes; nothing else reaches here
    }
  }
  const Device device = parameters.front().param.device();
  if (!float32.empty()) {
    launch_adam_foreach(
        float32, adam_scalars<float>(beta1, beta2, eps, weight_decay, decoupled_weight_decay),
        device);
  }
  if (!float64.empty()) {
    launch_adam_foreach(
        float64, adam_scalars<double>(beta1, beta2, eps, weight_decay, decoupled_weight_decay),
        device);
  }
  return true;
}

}  // namespace sg::cuda
