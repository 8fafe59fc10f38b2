// CPU reductions: sum, max, min over the trailing `reduced_dims` dims of a strided view.
// Float sums accumulate in double so long rows lose no precision.
#include <cmath>
#include <type_traits>

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
void reduce_typed(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
                  const Tensor& indices) {
  const int64_t nd = x.dim();
  const Shape outer(x.shape().begin(), x.shape().end() - reduced_dims);
  const Strides outer_strides(x.strides().begin(), x.strides().end() - reduced_dims);
  const Shape inner(x.shape().end() - reduced_dims, x.shape().end());
  const Strides inner_strides(x.strides().end() - reduced_dims, x.strides().end());
  const T* base = x.data_ptr<T>();
  T* o = out.data_ptr<T>();
  int64_t* idx = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;
  (void)nd;

  // One output element: reduce the inner block that starts at x offset `start`.
  auto reduce_block = [&](int64_t start, int64_t out_pos) {
    if (op == ReduceOp::Sum) {
      Accumulator<T> acc = 0;
      for_each_run<1>(inner, {inner_strides},
                      [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
                        const T* p = base + start + at[0];
                        for (int64_t i = 0; i < n; ++i) acc += p[i * step[0]];
                      });
      o[out_pos] = static_cast<T>(acc);
      return;
    }
    // Max / Min: keep the first extreme value; a NaN wins and stays (as in PyTorch).
    const bool want_max = op == ReduceOp::Max;
    T best{};
    int64_t best_at = -1;
    int64_t position = 0;
    for_each_run<1>(inner, {inner_strides},
                    [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
                      const T* p = base + start + at[0];
                      for (int64_t i = 0; i < n; ++i, ++position) {
                        T v = p[i * step[0]];
                        if (best_at >= 0 && is_nan_value(best)) continue;
                        if (best_at < 0 || is_nan_value(v) || (want_max ? v > best : v < best)) {
                          best = v;
                          best_at = position;
                        }
                      }
                    });
    o[out_pos] = best;
    if (idx != nullptr) idx[out_pos] = best_at;
  };

  int64_t out_pos = 0;
  for_each_run<1>(outer, {outer_strides},
                  [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
                    for (int64_t i = 0; i < n; ++i) reduce_block(at[0] + i * step[0], out_pos++);
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
