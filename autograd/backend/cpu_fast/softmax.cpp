// The fast softmax and log_softmax over float32 rows (the last dim), forward and backward, and the
// fused masked softmax of backend.h (any float dtype). Rows are split over the thread pool; rows
// of at most 64 go through the AVX-512 kernels of short_softmax.h, short rows through one
// vectorised exp over a whole block, the rest through vectorised loops with fast_exp
// (vec_math.h). Other dims and float64 are the reference's (backend/cpu/softmax.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "autograd/backend/cpu/strided_loop.h"
#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/backend/cpu_fast/short_softmax.h"
#include "autograd/backend/cpu_fast/vec_math.h"

namespace sg::cpu {

namespace {

// Softmax of float32 rows shorter than kShortRow (attention over 10 keys): per-row loops would be
// mostly vector prologue and scalar epilogue, and exp, the costly part, would run one element at a
// time in the epilogue. So a block of rows is done in three passes: x - max (0 weight: -inf), then
// exp as ONE long vectorised loop over the whole block, then the per-row sums and scaling.
// keep_row(r) gives row r's mask bytes (stride ks), or nullptr when every entry takes part.
constexpr int64_t kShortRow = 32;

template <typename KeepRow>
void softmax_short_rows(const float* px, float* py, int64_t rows, int64_t D, KeepRow keep_row,
                        int64_t ks) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  constexpr int64_t kBlock = 256;  // rows per block: the block stays in cache between passes
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t nr = std::min(kBlock, rows - r0);
    float* yb = py + r0 * D;
    for (int64_t r = 0; r < nr; ++r) {
      const float* x = px + (r0 + r) * D;
      float* y = yb + r * D;
      const uint8_t* keep = keep_row(r0 + r);
      float m = kNegInf;  // a NaN kept anywhere makes the row NaN (m, then every x - m)
      for (int64_t d = 0; d < D; ++d) {
        m = max_keeping_nan(m, keep == nullptr || keep[d * ks] ? x[d] : kNegInf);
      }
      if (keep == nullptr) {  // plain softmax: a row of -inf gives NaN, as in PyTorch
        for (int64_t d = 0; d < D; ++d) y[d] = x[d] - m;
        continue;
      }
      // A masked row with nothing kept is all -inf, so all zeros after exp (its sum is 0).
      for (int64_t d = 0; d < D; ++d) {
        const float v = x[d] - m;
        y[d] = keep[d * ks] && m != kNegInf ? v : kNegInf;
      }
    }
    const int64_t n = nr * D;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) yb[i] = fast_exp(yb[i]);
    for (int64_t r = 0; r < nr; ++r) {
      float* y = yb + r * D;
      double total = 0;  // in double, as everywhere (fewer than 32 terms: no slower)
      for (int64_t d = 0; d < D; ++d) total += y[d];
      // A row with nothing kept sums to 0 and stays 0; a row with a NaN sums to NaN and becomes
      // all NaN (y · 1/NaN), as in PyTorch.
      const float inv = total == 0 ? 0.0f : static_cast<float>(1.0 / total);
      for (int64_t d = 0; d < D; ++d) y[d] *= inv;
    }
  }
}

// The common case, float32 rows (the softmax over the keys of an attention, over a vocabulary):
// vectorised loops and fast_exp. The normaliser still accumulates in double.
void softmax_rows(const float* px, float* po, int64_t rows, int64_t D, bool log) {
  if (short_softmax_fits(D)) {
    if (log) return short_log_softmax_rows(px, po, rows, D);
    return short_softmax_rows(px, po, rows, D, nullptr, 0, 0);
  }
  if (!log && D < kShortRow) {
    return softmax_short_rows(
        px, po, rows, D, [](int64_t) -> const uint8_t* { return nullptr; }, 0);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = px + r * D;
    float* y = po + r * D;
    // The max (a NaN anywhere makes the row NaN).
    const float m = running_max<float>(D, [x](int64_t d) { return x[d]; });
    double total = 0;
    if (log) {
#pragma omp simd reduction(+ : total)
      for (int64_t d = 0; d < D; ++d) total += fast_exp(x[d] - m);
      // (x - m) first: with logits near 1000, m + log(total) would round away the log.
      const float log_total = static_cast<float>(std::log(total));
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) y[d] = (x[d] - m) - log_total;
    } else {
#pragma omp simd reduction(+ : total)
      for (int64_t d = 0; d < D; ++d) {
        y[d] = fast_exp(x[d] - m);
        total += y[d];
      }
      const float inv = static_cast<float>(1.0 / total);
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) y[d] *= inv;
    }
  }
}

void softmax_backward_rows(const float* pg, const float* py, float* po, int64_t rows, int64_t D,
                           bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = pg + r * D;
    const float* y = py + r * D;
    float* dx = po + r * D;
    double dot = 0;
    if (log) {
#pragma omp simd reduction(+ : dot)
      for (int64_t d = 0; d < D; ++d) dot += g[d];
      const float s = static_cast<float>(dot);
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) dx[d] = g[d] - fast_exp(y[d]) * s;
    } else {
#pragma omp simd reduction(+ : dot)
      for (int64_t d = 0; d < D; ++d) dot += double(g[d]) * double(y[d]);
      const float s = static_cast<float>(dot);
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) dx[d] = y[d] * (g[d] - s);
    }
  }
}

}  // namespace

void FastCpuBackend::softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) {
  DimLayout l = dim_layout(x.shape(), x.dim() == 0 ? 0 : dim);
  if (x.dtype() != kFloat32 || l.inner != 1) return CpuBackend::softmax(x, dim, log, out);
  // Rows split over the thread pool: exp makes softmax compute-bound, so it scales.
  const float* px = x.data_ptr<float>();
  float* po = out.data_ptr<float>();
  const int64_t D = l.D;
  parallel_for(
      l.outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(D, 1)),
      [&](int64_t lo, int64_t hi) { softmax_rows(px + lo * D, po + lo * D, hi - lo, D, log); });
}

void FastCpuBackend::softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                                      const Tensor& out) {
  DimLayout l = dim_layout(y.shape(), y.dim() == 0 ? 0 : dim);
  if (y.dtype() != kFloat32 || l.inner != 1) {
    return CpuBackend::softmax_backward(grad, y, dim, log, out);
  }
  if (!log && short_softmax_fits(l.D)) {
    return short_softmax_backward_rows(grad.data_ptr<float>(), y.data_ptr<float>(),
                                       out.data_ptr<float>(), l.outer, l.D);
  }
  softmax_backward_rows(grad.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), l.outer,
                        l.D, log);
}

}  // namespace sg::cpu

namespace sg::cpu {

namespace {

// One row of masked_softmax: keep[d * ks] says whether x[d] takes part. kUnitStride: ks is 1
// (a mask that varies along the row, the common case), known at compile time so that the loops
// vectorise.
template <typename T, bool kUnitStride>
void masked_softmax_row(const T* x, const uint8_t* keep, int64_t ks, T* y, int64_t D) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const int64_t s = kUnitStride ? 1 : ks;
  // The max over the kept entries (NaN if one of them is NaN).
  const T m = running_max<T>(D, [=](int64_t d) {
    const T xv = x[d];  // read before choosing: a select, not a branch
    return keep[d * s] ? xv : kNegInf;
  });
  if (m == kNegInf) {  // nothing to attend to (or only -inf scores): a row of zeros
    std::fill(y, y + D, T(0));
    return;
  }
  // exp, then the sum in its own loop: as one loop (select, exp, widening to double) it ran
  // slower (bench_kernels, masked_softmax [256, 64, 64]; bench/NOTES.md).
  for (int64_t d = 0; d < D; ++d) {
    const T xv = x[d];
    // A masked x may be anything, even NaN: it is replaced by -inf, whose exp is exactly 0.
    const T shifted = keep[d * s] ? xv - m : -std::numeric_limits<T>::infinity();
    if constexpr (std::is_same_v<T, float>) {
      y[d] = fast_exp(shifted);
    } else {
      y[d] = std::exp(shifted);
    }
  }
  double total = 0;
#pragma omp simd reduction(+ : total)
  for (int64_t d = 0; d < D; ++d) total += y[d];
  const T inv = static_cast<T>(1.0 / total);
#pragma omp simd
  for (int64_t d = 0; d < D; ++d) y[d] *= inv;
}

template <typename T>
void masked_softmax_row(const T* x, const uint8_t* keep, int64_t ks, T* y, int64_t D) {
  if (ks == 1) return masked_softmax_row<T, true>(x, keep, 1, y, D);
  if constexpr (std::is_same_v<T, float>) {
    // A mask broadcast along the row (a padding mask seen from the keys' side is not; a per-query
    // mask is) keeps all of it or nothing.
    if (ks == 0 && *keep) return softmax_rows(x, y, 1, D, /*log=*/false);
  }
  masked_softmax_row<T, false>(x, keep, ks, y, D);
}

void masked_softmax_serial(const Tensor& x, const Tensor& mask, const Tensor& out) {
  const int64_t D = x.dim() == 0 ? 1 : x.size(-1);
  const int64_t ks = x.dim() == 0 ? 0 : mask.stride(-1);
  const Shape rows_shape(x.shape().begin(), x.shape().end() - (x.dim() == 0 ? 0 : 1));
  const Strides mask_row_strides(mask.strides().begin(),
                                 mask.strides().end() - (x.dim() == 0 ? 0 : 1));
  // The mask's bools read as bytes (0 or 1): GCC vectorises no loop over `bool` loads.
  const auto* pm = reinterpret_cast<const uint8_t*>(mask.data_ptr<bool>());
  dispatch_floating("masked_softmax", x.dtype(), [&]<typename T>() {
    const T* px = x.data_ptr<T>();
    T* po = out.data_ptr<T>();
    int64_t row = 0;  // x and out are contiguous: rows follow each other
    for_each_run<1>(
        rows_shape, {&mask_row_strides},
        [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
          if constexpr (std::is_same_v<T, float>) {
            if (short_softmax_fits(D)) {
              short_softmax_rows(px + row * D, po + row * D, n, D, pm + at[0], step[0], ks);
              row += n;
              return;
            }
            if (D < kShortRow) {
              softmax_short_rows(
                  px + row * D, po + row * D, n, D,
                  [&](int64_t i) { return pm + at[0] + i * step[0]; }, ks);
              row += n;
              return;
            }
          }
          for (int64_t i = 0; i < n; ++i, ++row) {
            masked_softmax_row(px + row * D, pm + at[0] + i * step[0], ks, po + row * D, D);
          }
        });
  });
}

}  // namespace

bool FastCpuBackend::masked_softmax(const Tensor& x, const Tensor& mask, const Tensor& out) {
  if (x.dtype() != kFloat32) return false;  // float64: the composition of the op
  const int64_t n = x.dim() == 0 ? 1 : x.size(0);
  if (x.dim() < 2 || n < 2 || x.numel() < 2 * kParallelGrain) {
    masked_softmax_serial(x, mask, out);
    return true;
  }
  parallel_for(
      n, std::max<int64_t>(1, kParallelGrain / (x.numel() / n)), [&](int64_t lo, int64_t hi) {
        masked_softmax_serial(rows_of(x, lo, hi), rows_of(mask, lo, hi), rows_of(out, lo, hi));
      });
  return true;
}

}  // namespace sg::cpu
