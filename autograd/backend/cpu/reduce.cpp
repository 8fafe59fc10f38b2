// CPU reductions: sum, max, min over the trailing `reduced_dims` dims of a strided view.
// Float sums accumulate in double so long rows lose no precision.
//
// Two layouts cover nearly every reduction a model makes, and get loops of their own:
//   rows     the reduced elements are contiguous (mean over the features in layer_norm):
//            one vectorised sum per output element;
//   columns  the output elements are contiguous in x (a bias gradient: g [B*T, D] summed over
//            B*T into [D]): whole rows of x are added into a row of accumulators, so memory is
//            read in order instead of with a stride of D per element.
// Anything else walks each output element's block with the strided loop.
#include <cmath>
#include <type_traits>
#include <vector>

#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu/strided_loop.h"

namespace sg::cpu {

namespace {

template <typename T>
using Accumulator = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

template <typename T>
bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

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
  if (is_nan_value(best)) return {best, 0};
  for (int64_t i = 1; i < n; ++i) {
    const T v = p[i * step];
    if (is_nan_value(v)) return {v, i};
    if (want_max ? v > best : v < best) {
      best = v;
      best_at = i;
    }
  }
  return {best, best_at};
}

template <typename T>
void reduce_typed(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
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
  if (outer.empty) return;  // no output elements

  // The elements of one output's block, in order, at x offset `start`.
  auto for_each_in_block = [&](int64_t start, auto&& visit) {
    if (fits) {
      for_each_merged_run(inner, Offsets<1>{start},
                          [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
                            for (int64_t i = 0; i < n; ++i) visit(base[at[0] + i * step[0]]);
                          });
    } else {
      const Shape block(shape.begin() + first_inner, shape.end());
      const Strides block_strides(x.strides().begin() + first_inner, x.strides().end());
      for_each_run<1>(block, {&block_strides},
                      [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
                        for (int64_t i = 0; i < n; ++i) visit(base[start + at[0] + i * step[0]]);
                      });
    }
  };
  // Calls f(x offset of the block, output position) for every output element, in order.
  auto for_each_output = [&](auto&& f) {
    int64_t out_pos = 0;
    auto visit_runs = [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
      for (int64_t i = 0; i < n; ++i) f(at[0] + i * step[0], out_pos++);
    };
    if (fits) return for_each_merged_run(outer, Offsets<1>{0}, visit_runs);
    const Shape kept(shape.begin(), shape.begin() + first_inner);
    const Strides kept_strides(x.strides().begin(), x.strides().begin() + first_inner);
    for_each_run<1>(kept, {&kept_strides}, visit_runs);
  };
  const bool rows = fits && inner.ndim == 1 && inner.strides[0][0] == 1;

  if (op == ReduceOp::Sum) {
    if (inner.empty) {  // a sum of nothing
      for_each_output([&](int64_t, int64_t pos) { o[pos] = T(0); });
      return;
    }
    if (rows) {
      const int64_t n = inner.sizes[0];
      for_each_output([&](int64_t start, int64_t pos) {
        o[pos] = static_cast<T>(sum_contiguous(base + start, n));
      });
      return;
    }
    const bool columns = fits && outer.ndim >= 1 && outer.strides[0][outer.ndim - 1] == 1;
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
      return;
    }
    for_each_output([&](int64_t start, int64_t pos) {
      Accumulator<T> acc = 0;
      for_each_in_block(start, [&](T v) { acc += v; });
      o[pos] = static_cast<T>(acc);
    });
    return;
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
    return;
  }
  for_each_output([&](int64_t start, int64_t pos) {
    T best{};
    int64_t best_at = -1, position = 0;
    for_each_in_block(start, [&](T v) {
      const bool take = best_at < 0 || (!is_nan_value(best) &&
                                        (is_nan_value(v) || (want_max ? v > best : v < best)));
      if (take) {
        best = v;
        best_at = position;
      }
      ++position;
    });
    o[pos] = best;
    if (idx != nullptr) idx[pos] = best_at;
  });
}

}  // namespace

void reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
            const Tensor& indices) {
  SG_CHECK(
      op == ReduceOp::Sum || numel_of(Shape(x.shape().end() - reduced_dims, x.shape().end())) > 0,
      "{}: cannot reduce over an empty dimension (shape {})", op_name(op), x.shape());
  dispatch_dtype(op_name(op), x.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      SG_FAIL("{}: not defined for bool tensors", op_name(op));
    } else {
      reduce_typed<T>(op, x, reduced_dims, out, indices);
    }
  });
}

}  // namespace sg::cpu
