// CPU layer normalisation over the last dim, forward and backward, one row at a time.
//
// Forward, for a row x of D values:   mean = Σ x / D,   var = Σ (x - mean)² / D (two passes, no
// cancellation),   rstd = 1 / √(var + eps),   x̂ = (x - mean) · rstd,   y = x̂ · w + b.
// Backward, with ĝ = g · w (the gradient reaching x̂):
//   dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂)),   dw = Σ_rows g · x̂,   db = Σ_rows g.
// The composed version (nn::layer_norm) runs about ten kernels forward and twenty backward, each a
// pass over the tensor with its own temporary; here it is two passes each way. Sums accumulate in
// double, as in reduce.cpp (docs/design.md, "Float sums accumulate in double"). Float rows of at
// most 64 take the AVX-512 kernels of short_layer_norm.h where the CPU has them.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/backend/cpu_fast/short_layer_norm.h"

namespace sg::cpu {

namespace {

// Rows [lo, hi) of the forward.
template <typename T>
void forward_rows(int64_t lo, int64_t hi, int64_t D, const T* px, const T* w, const T* b,
                  double eps, T* py, T* pmean, T* prstd) {
  if constexpr (std::is_same_v<T, float>) {
    if (short_layer_norm_fits(D)) {
      return short_layer_norm_rows(px + lo * D, w, b, eps, py + lo * D, pmean + lo, prstd + lo,
                                   hi - lo, D);
    }
  }
  for (int64_t r = lo; r < hi; ++r) {
    const T* xr = px + r * D;
    T* yr = py + r * D;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t d = 0; d < D; ++d) sum += xr[d];
    const T m = static_cast<T>(sum / static_cast<double>(D));
    double sq = 0;
#pragma omp simd reduction(+ : sq)
    for (int64_t d = 0; d < D; ++d) sq += static_cast<double>((xr[d] - m) * (xr[d] - m));
    const T s = static_cast<T>(1.0 / std::sqrt(sq / static_cast<double>(D) + eps));
    pmean[r] = m;
    prstd[r] = s;
    if (w != nullptr && b != nullptr) {
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) yr[d] = (xr[d] - m) * s * w[d] + b[d];
    } else {
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) {
        T v = (xr[d] - m) * s;
        if (w != nullptr) v *= w[d];
        if (b != nullptr) v += b[d];
        yr[d] = v;
      }
    }
  }
}

template <typename T>
void layer_norm_typed(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                      const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  const int64_t D = x.size(-1), rows = D == 0 ? 0 : x.numel() / D;
  const T* px = x.data_ptr<T>();
  const T* w = weight.defined() ? weight.data_ptr<T>() : nullptr;
  const T* b = bias.defined() ? bias.data_ptr<T>() : nullptr;
  T* py = out.data_ptr<T>();
  T* pmean = mean.data_ptr<T>();
  T* prstd = rstd.data_ptr<T>();
  parallel_for(
      rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(D, 1)),
      [&](int64_t lo, int64_t hi) { forward_rows(lo, hi, D, px, w, b, eps, py, pmean, prstd); });
}

// What the backward of rows [lo, hi) needs and produces: dx for those rows, and their share of
// dweight and dbias, summed into `sums` ([dw (D values), db (D values)], double).
template <typename T>
struct BackwardRows {
  int64_t D;
  const T *g, *x, *mean, *rstd, *w;  // w may be null
  T* dx;                             // may be null
  bool want_dw, want_db;

  void run(int64_t lo, int64_t hi, double* sums) const {
    if constexpr (std::is_same_v<T, float>) {
      if (short_layer_norm_fits(D)) {
        return short_layer_norm_backward_rows(
            g + lo * D, x + lo * D, mean + lo, rstd + lo, w, dx != nullptr ? dx + lo * D : nullptr,
            hi - lo, D, want_dw ? sums : nullptr, want_db ? sums + D : nullptr);
      }
    }
    std::vector<T> buffers(2 * static_cast<size_t>(D));
    T* xhat = buffers.data();
    T* ghat = buffers.data() + D;
    double* dw = sums;
    double* db = sums + D;
    const double inv_d = 1.0 / static_cast<double>(D);
    for (int64_t r = lo; r < hi; ++r) {
      const T* gr = g + r * D;
      const T* xr = x + r * D;
      const T m = mean[r], s = rstd[r];
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) {
        xhat[d] = (xr[d] - m) * s;
        ghat[d] = w != nullptr ? gr[d] * w[d] : gr[d];
      }
      if (want_dw) {
#pragma omp simd
        for (int64_t d = 0; d < D; ++d) dw[d] += gr[d] * xhat[d];
      }
      if (want_db) {
#pragma omp simd
        for (int64_t d = 0; d < D; ++d) db[d] += gr[d];
      }
      if (dx == nullptr) continue;
      double sum_g = 0, sum_gx = 0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
      for (int64_t d = 0; d < D; ++d) {
        sum_g += ghat[d];
        sum_gx += ghat[d] * xhat[d];
      }
      const T a = static_cast<T>(sum_g * inv_d);
      const T c = static_cast<T>(sum_gx * inv_d);
      T* dr = dx + r * D;
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) dr[d] = s * (ghat[d] - a - xhat[d] * c);
    }
  }
};

template <typename T>
void layer_norm_backward_typed(const Tensor& grad, const Tensor& x, const Tensor& mean,
                               const Tensor& rstd, const Tensor& weight, const Tensor& dx,
                               const Tensor& dweight, const Tensor& dbias) {
  const int64_t D = x.size(-1), rows = D == 0 ? 0 : x.numel() / D;
  const BackwardRows<T> job{D,
                            grad.data_ptr<T>(),
                            x.data_ptr<T>(),
                            mean.data_ptr<T>(),
                            rstd.data_ptr<T>(),
                            weight.defined() ? weight.data_ptr<T>() : nullptr,
                            dx.defined() ? dx.data_ptr<T>() : nullptr,
                            dweight.defined(),
                            dbias.defined()};
  // Rows are cut into blocks by the shape alone (Note [Blocks fixed by the shape] in
  // parallel.h), the blocks spread over the thread pool; each block sums its own share of
  // dweight and dbias, and the blocks' sums are added in block order afterwards: the same bits
  // with any number of threads.
  const int64_t blocks = fixed_blocks(  // never more blocks than rows
      std::min(static_cast<double>(rows * D) / kParallelGrain, static_cast<double>(rows)), 1);
  const auto width = 2 * static_cast<size_t>(D);
  std::vector<double> partials(static_cast<size_t>(blocks) * width);  // block b's sums at b·width
  parallel_for(blocks, 1, [&](int64_t first, int64_t end) {
    for (int64_t b = first; b < end; ++b) {
      job.run(rows * b / blocks, rows * (b + 1) / blocks, partials.data() + b * width);
    }
  });
  std::vector<double> total(width);
  for (int64_t b = 0; b < blocks; ++b) {
    for (size_t i = 0; i < width; ++i) total[i] += partials[b * width + i];
  }
  if (dweight.defined()) {
    T* out = dweight.data_ptr<T>();
    for (int64_t d = 0; d < D; ++d) out[d] = static_cast<T>(total[d]);
  }
  if (dbias.defined()) {
    T* out = dbias.data_ptr<T>();
    for (int64_t d = 0; d < D; ++d) out[d] = static_cast<T>(total[D + d]);
  }
}

}  // namespace

bool FastCpuBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                double eps, const Tensor& out, const Tensor& mean,
                                const Tensor& rstd) {
  if (x.dtype() != kFloat32) return false;  // float64: the composition (what gradcheck checks)
  layer_norm_typed<float>(x, weight, bias, eps, out, mean, rstd);
  return true;
}

bool FastCpuBackend::layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                                         const Tensor& rstd, const Tensor& weight, const Tensor& dx,
                                         const Tensor& dweight, const Tensor& dbias) {
  if (x.dtype() != kFloat32) return false;
  layer_norm_backward_typed<float>(grad, x, mean, rstd, weight, dx, dweight, dbias);
  return true;
}

}  // namespace sg::cpu
