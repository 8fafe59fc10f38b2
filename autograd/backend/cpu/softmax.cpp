// CPU softmax and log_softmax along one dim, forward and backward.
//
// A contiguous tensor seen as [outer, D, inner]: element (o, d, i) sits at (o * D + d) * inner + i,
// so the softmax runs over d with stride `inner` (1 for the last dim, the common case). The max is
// subtracted first so exp never overflows; the normaliser accumulates in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/backend/cpu/cpu_backend.h"

namespace sg::cpu {

void CpuBackend::softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) {
  DimLayout l = dim_layout(x.shape(), x.dim() == 0 ? 0 : dim);
  dispatch_floating(log ? "log_softmax" : "softmax", x.dtype(), [&]<typename T>() {
    const T* px = x.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        const T* row = px + o * l.D * l.inner + i;
        T* dst = po + o * l.D * l.inner + i;
        // pass 1: the max, so exp never overflows
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t d = 0; d < l.D; ++d) m = std::max(m, row[d * l.inner]);
        // pass 2: the normaliser, accumulated in double
        double total = 0;
        for (int64_t d = 0; d < l.D; ++d) total += std::exp(double(row[d * l.inner] - m));
        // pass 3: write out
        if (log) {
          T log_total = static_cast<T>(std::log(total));
          for (int64_t d = 0; d < l.D; ++d) dst[d * l.inner] = row[d * l.inner] - m - log_total;
        } else {
          T inv = static_cast<T>(1.0 / total);
          for (int64_t d = 0; d < l.D; ++d) dst[d * l.inner] = std::exp(row[d * l.inner] - m) * inv;
        }
      }
    }
  });
}

void CpuBackend::softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                                  const Tensor& out) {
  // --8<-- [start:ex06.softmax_backward]
  DimLayout l = dim_layout(y.shape(), y.dim() == 0 ? 0 : dim);
  dispatch_floating("softmax_backward", y.dtype(), [&]<typename T>() {
    const T* pg = grad.data_ptr<T>();
    const T* py = y.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t i = 0; i < l.inner; ++i) {
        int64_t base = o * l.D * l.inner + i;
        double dot = 0;
        if (log) {
          // forward: y = x - logsumexp(x), so dx = g - softmax(x) Σ g = g - exp(y) Σ g
          for (int64_t d = 0; d < l.D; ++d) dot += pg[base + d * l.inner];
          for (int64_t d = 0; d < l.D; ++d) {
            int64_t k = base + d * l.inner;
            po[k] = pg[k] - std::exp(py[k]) * static_cast<T>(dot);
          }
        } else {
          // forward: y = softmax(x), so dx = y ⊙ (g - Σ g⊙y)
          for (int64_t d = 0; d < l.D; ++d) {
            int64_t k = base + d * l.inner;
            dot += double(pg[k]) * double(py[k]);
          }
          for (int64_t d = 0; d < l.D; ++d) {
            int64_t k = base + d * l.inner;
            po[k] = py[k] * (pg[k] - static_cast<T>(dot));
          }
        }
      }
    }
  });
  // --8<-- [end:ex06.softmax_backward]
}

}  // namespace sg::cpu
