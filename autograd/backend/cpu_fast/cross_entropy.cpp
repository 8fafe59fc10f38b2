// Cross-entropy over rows of float logits (backend.h: cross_entropy, cross_entropy_backward):
// the log-softmax by the softmax kernel, then one pass over the rows for each row's loss; the
// backward is one pass that writes dx = scale · (softmax - q) row by row, the gradient written
// by hand. ops/cross_entropy.cpp defines the loss from ops (cross_entropy_composed), ~15 small
// ops each way (a where, a gather, casts, sums) with their temporaries, a noticeable share of the
// tiny model's step on its [720, 11] logits (bench/NOTES.md).
//   forward   loss_i = (1 - ε)(-log p[i, t_i]) + ε (-Σ_c log p[i, c]) / C, 0 where t_i is ignored
//   backward  dx[i, c] = s_i (p[i, c] - ε / C - (1 - ε)[c == t_i]), 0 in ignored rows
// float32 only: float64 (every gradcheck) declines to the composition, which the tests compare
// with.
#include <algorithm>
#include <cstdint>

#include "autograd/backend/cpu_fast/avx512_rows.h"
#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/backend/cpu_fast/vec_math.h"

// GCC 12 warns that the _mm512_undefined_ps() inside AVX-512 intrinsics is used uninitialised
// once they are inlined (bug 105593, as in short_softmax.cpp); here the warning comes where the
// row template is instantiated, in cross_entropy_backward, so it is off for the whole file.
SG_BEGIN_GCC_BUG_105593

namespace sg::cpu {

namespace {

// Logits [N, C] and targets [N], float32 and int64, both contiguous.
bool fits(const Tensor& rows, const Tensor& target) {
  return rows.dtype() == kFloat32 && rows.dim() == 2 && rows.is_contiguous() &&
         target.dtype() == kInt64 && target.dim() == 1 && target.is_contiguous() &&
         target.size(0) == rows.size(0);
}

int64_t rows_per_grain(int64_t C) { return std::max<int64_t>(1, kParallelGrain / C); }

// What one row of the backward needs besides its place: s_i (0 for an ignored row), t_i, ε / C
// and 1 - ε.
struct RowGradient {
  float scale;
  int64_t target;
  float smooth, hit;
};

// The gradient of one row, softmax minus the target distribution, by hand: dx_row = s
// (exp(lp_row) - ε/C), then - s (1 - ε) at the target. The portable loop.
void gradient_row(const float* lp_row, float* dx_row, int64_t C, RowGradient r) {
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) dx_row[c] = r.scale * (fast_exp(lp_row[c]) - r.smooth);
  dx_row[r.target] -= r.scale * r.hit;
}

#ifdef SG_AVX512_ROWS
// The same for rows of C <= 16 V floats, V registers with the lanes past C masked off: the
// portable loop spends most of a row of 11 in its scalar tail.
template <int V>
[[SG_AVX512]] void gradient_row_avx512(const float* lp_row, float* dx_row,
                                       const avx512::RowLanes<V>& lanes, RowGradient r) {
  const __m512 scale = _mm512_set1_ps(r.scale), smooth = _mm512_set1_ps(r.smooth);
  for (int i = 0; i < V; ++i) {
    const __m512 p = avx512::exp16(_mm512_maskz_loadu_ps(lanes.lanes[i], lp_row + 16 * i));
    _mm512_mask_storeu_ps(dx_row + 16 * i, lanes.lanes[i],
                          _mm512_mul_ps(scale, _mm512_sub_ps(p, smooth)));
  }
  dx_row[r.target] -= r.scale * r.hit;
}
#endif

}  // namespace

bool FastCpuBackend::cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                                   double label_smoothing, const Tensor& log_probs,
                                   const Tensor& row_loss) {
  if (!fits(logits, target) || !log_probs.is_contiguous() || !row_loss.is_contiguous()) {
    return false;
  }
  softmax(logits, 1, /*log=*/true, log_probs);
  const int64_t N = logits.size(0), C = logits.size(1);
  const float* lp = log_probs.data_ptr<float>();
  const int64_t* t = target.data_ptr<int64_t>();
  float* loss = row_loss.data_ptr<float>();
  const double eps = label_smoothing;
  parallel_for(N, rows_per_grain(C), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      if (t[i] == ignore_index) {  // padding: no loss (whatever its logits hold)
        loss[i] = 0.0f;
        continue;
      }
      const float* row = lp + i * C;
      double value = -(1.0 - eps) * row[t[i]];
      if (eps > 0) {
        double sum = 0.0;
#pragma omp simd reduction(+ : sum)
        for (int64_t c = 0; c < C; ++c) sum += row[c];
        value -= eps * sum / static_cast<double>(C);
      }
      loss[i] = static_cast<float>(value);
    }
  });
  return true;
}

bool FastCpuBackend::cross_entropy_backward(const Tensor& log_probs, const Tensor& target,
                                            const Tensor& grad, double divisor,
                                            int64_t ignore_index, double label_smoothing,
                                            const Tensor& dx) {
  const int64_t N = log_probs.size(0), C = log_probs.size(1);
  const bool per_row = grad.numel() == N && grad.numel() != 1;
  if (!fits(log_probs, target) || !dx.is_contiguous() || grad.dtype() != kFloat32 ||
      !grad.is_contiguous() || (grad.numel() != 1 && !per_row)) {
    return false;
  }
  const float* lp = log_probs.data_ptr<float>();
  const int64_t* t = target.data_ptr<int64_t>();
  const float* g = grad.data_ptr<float>();
  float* out = dx.data_ptr<float>();
  const auto smooth = static_cast<float>(label_smoothing / static_cast<double>(C));
  const auto hit = static_cast<float>(1.0 - label_smoothing);
  // Row i's numbers; false for an ignored row, whose gradient is zeros.
  // Every row through write_row(lp_row, dx_row, r), an ignored row as zeros.
  auto over_rows = [&](auto write_row) {
    parallel_for(N, rows_per_grain(C), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        if (t[i] == ignore_index) {
          std::fill(out + i * C, out + (i + 1) * C, 0.0f);
          continue;
        }
        const auto s = static_cast<float>(static_cast<double>(g[per_row ? i : 0]) / divisor);
        write_row(lp + i * C, out + i * C, RowGradient{s, t[i], smooth, hit});
      }
    });
  };
#ifdef SG_AVX512_ROWS
  if (C <= 64 && avx512::cpu_has_avx512()) {
    avx512::with_registers_per_row(C, [&]<int V>() {
      const avx512::RowLanes<V> lanes(C);
      over_rows([&](const float* lp_row, float* dx_row, RowGradient r) {
        gradient_row_avx512<V>(lp_row, dx_row, lanes, r);
      });
    });
    return true;
  }
#endif
  over_rows([&](const float* lp_row, float* dx_row, RowGradient r) {
    gradient_row(lp_row, dx_row, C, r);
  });
  return true;
}

}  // namespace sg::cpu

SG_END_GCC_BUG_105593
