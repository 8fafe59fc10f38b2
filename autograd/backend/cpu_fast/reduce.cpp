// The fast reductions. Two layouts cover nearly every reduction a model makes, and get loops of
// their own (sums in double, as in the reference, backend/cpu/reduce.cpp):
//   rows     the reduced elements are contiguous (mean over the features in layer_norm):
//            one vectorised sum per output element;
//   columns  the output elements are contiguous in x (a bias gradient: g [B*T, D] summed over
//            B*T into [D]): whole rows of x are added into a row of accumulators, so memory is
//            read in order instead of with a stride of D per element.
// Anything else is the reference's: each output element's block walked with the strided loop.
#include <cmath>
#include <type_traits>
#include <vector>

#include "autograd/backend/cpu/scalar_math.h"
#include "autograd/backend/cpu/strided_loop.h"
#include "autograd/backend/cpu_fast/fast_cpu_backend.h"

namespace sg::cpu {

namespace {

template <typename T>
Accumulator<T> sum_contiguous(const T* p, int64_t n) {
  Accumulator<T> acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; ++i) acc += static_cast<Accumulator<T>>(p[i]);
  return acc;
}

// The first extreme value of n elements (stride `step`) and its position; a NaN wins and stays,
// as in PyTorch.
template <typename T>
std::pair<T, int64_t> extreme_of(const T* p, int64_t n, int64_t step, bool want_max) {
  T best = p[0];
  int64_t best_at = 0;
  if (is_nan(best)) return {best, 0};
  for (int64_t i = 1; i < n; ++i) {
    const T v = p[i * step];
    if (is_nan(v)) return {v, i};
    if (want_max ? v > best : v < best) {
      best = v;
      best_at = i;
    }
  }
  return {best, best_at};
}

// The reduction in one of the two layouts above; false for any other (and for sums of nothing).
template <typename T>
bool reduce_fast(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
                 const Tensor& indices) {
  const Shape& shape = x.shape();
  const size_t nd = shape.size(), first_inner = nd - static_cast<size_t>(reduced_dims);
  const std::array<const Strides*, 1> strides = {&x.strides()};
  MergedDims<1> outer, inner;
  const bool fits = merge_dims(shape, strides, 0, first_inner, outer) &&
                    merge_dims(shape, strides, first_inner, nd, inner);
  const T* base = x.data_ptr<T>();
  T* o = out.data_ptr<T>();
  int64_t* idx = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
  if (!fits || outer.empty || inner.empty) return false;

  // Calls f(x offset of the block, output position) for every output element, in order.
  auto for_each_output = [&](auto&& f) {
    int64_t out_pos = 0;
    auto visit_runs = [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
      for (int64_t i = 0; i < n; ++i) f(at[0] + i * step[0], out_pos++);
    };
    for_each_merged_run(outer, Offsets<1>{0}, visit_runs);
  };
  const bool rows = inner.ndim == 1 && inner.strides[0][0] == 1;

  if (op == ReduceOp::Sum) {
    if (rows) {
      const int64_t n = inner.sizes[0];
      for_each_output([&](int64_t start, int64_t pos) {
        o[pos] = static_cast<T>(sum_contiguous(base + start, n));
      });
      return true;
    }
    const bool columns = outer.ndim >= 1 && outer.strides[0][outer.ndim - 1] == 1;
    if (columns) {
      const int64_t C = outer.sizes[outer.ndim - 1];
      MergedDims<1> rest = outer;  // the outer dims without the contiguous one
      --rest.ndim;
      std::vector<Accumulator<T>> acc(static_cast<size_t>(C));
      Accumulator<T>* a = acc.data();
      int64_t out_pos = 0;
      for_each_merged_run(
          rest, Offsets<1>{0}, [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
            for (int64_t r = 0; r < n; ++r) {
              std::fill(acc.begin(), acc.end(), Accumulator<T>(0));
              for_each_merged_run(
                  inner, Offsets<1>{at[0] + r * step[0]},
                  [&](const Offsets<1>& in_at, int64_t m, const Offsets<1>& in_step) {
                    const T* row = base + in_at[0];
                    const int64_t stride = in_step[0];
                    // Four rows per pass over the accumulators: a quarter of the loads and
                    // stores of `a`, and four independent adds instead of one chain.
                    int64_t i = 0;
                    for (; i + 4 <= m; i += 4, row += 4 * stride) {
                      const T *r1 = row + stride, *r2 = row + 2 * stride, *r3 = row + 3 * stride;
#pragma omp simd
                      for (int64_t c = 0; c < C; ++c) {
                        a[c] += (Accumulator<T>(row[c]) + Accumulator<T>(r1[c])) +
                                (Accumulator<T>(r2[c]) + Accumulator<T>(r3[c]));
                      }
                    }
                    for (; i < m; ++i, row += stride) {
#pragma omp simd
                      for (int64_t c = 0; c < C; ++c) a[c] += row[c];
                    }
                  });
              for (int64_t c = 0; c < C; ++c) o[out_pos + c] = static_cast<T>(a[c]);
              out_pos += C;
            }
          });
      return true;
    }
    return false;
  }

  // Max / Min: keep the first extreme value; a NaN wins and stays (as in PyTorch).
  const bool want_max = op == ReduceOp::Max;
  if (rows) {
    const int64_t n = inner.sizes[0];
    for_each_output([&](int64_t start, int64_t pos) {
      auto [best, at] = extreme_of(base + start, n, 1, want_max);
      o[pos] = best;
      if (idx != nullptr) idx[pos] = at;
    });
    return true;
  }
  return false;
}

}  // namespace

void FastCpuBackend::reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
                            const Tensor& indices) {
  const bool done = dispatch_dtype(op_name(op), x.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      return false;
    } else {
      return reduce_fast<T>(op, x, reduced_dims, out, indices);
    }
  });
  if (!done) CpuBackend::reduce(op, x, reduced_dims, out, indices);
}

}  // namespace sg::cpu
