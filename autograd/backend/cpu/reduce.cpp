// CPU reductions: sum, max, min over the trailing `reduced_dims` dims of a strided view x
// [outer..., reduced...] into out [outer...]. Each output element walks its block of x with the
// strided loop (strided_loop.h). Float sums accumulate in double, so long rows lose no precision
// (docs/design.md, "Float sums accumulate in double"); max and min keep the first extreme value,
// and a NaN wins and stays, as in PyTorch. The op has checked that max/min reduce no empty dim.
#include <cmath>
#include <type_traits>

#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu/scalar_math.h"
#include "autograd/backend/cpu/strided_loop.h"

namespace sg::cpu {

namespace {

template <typename T>
void reduce_typed(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
                  const Tensor& indices) {
  const size_t nd = x.shape().size(), first_inner = nd - static_cast<size_t>(reduced_dims);
  const Shape kept(x.shape().begin(), x.shape().begin() + first_inner);
  const Strides kept_strides(x.strides().begin(), x.strides().begin() + first_inner);
  const Shape block(x.shape().begin() + first_inner, x.shape().end());
  const Strides block_strides(x.strides().begin() + first_inner, x.strides().end());
  const T* base = x.data_ptr<T>();
  T* o = out.data_ptr<T>();
  int64_t* idx = indices.defined() ? indices.data_ptr<int64_t>() : nullptr;

  // Calls visit(v) for the elements of one output's block, in order, from x offset `start`.
  auto for_each_in_block = [&](int64_t start, auto&& visit) {
    for_each_run<1>(block, {&block_strides},
                    [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
                      for (int64_t i = 0; i < n; ++i) visit(base[start + at[0] + i * step[0]]);
                    });
  };
  const bool want_max = op == ReduceOp::Max;
  int64_t pos = 0;  // the output element, in order
  for_each_run<1>(
      kept, {&kept_strides}, [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
        for (int64_t r = 0; r < n; ++r, ++pos) {
          const int64_t start = at[0] + r * step[0];
          if (op == ReduceOp::Sum) {
            Accumulator<T> acc = 0;
            for_each_in_block(start, [&](T v) { acc += v; });
            o[pos] = static_cast<T>(acc);
            continue;
          }
          T best{};
          int64_t best_at = -1, position = 0;
          for_each_in_block(start, [&](T v) {
            const bool take =
                best_at < 0 || (!is_nan(best) && (is_nan(v) || (want_max ? v > best : v < best)));
            if (take) {
              best = v;
              best_at = position;
            }
            ++position;
          });
          o[pos] = best;
          if (idx != nullptr) idx[pos] = best_at;
        }
      });
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
                        const Tensor& indices) {
  dispatch_dtype(op_name(op), x.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      SG_FAIL("{}: not defined for bool tensors", op_name(op));
    } else {
      reduce_typed<T>(op, x, reduced_dims, out, indices);
    }
  });
}

}  // namespace sg::cpu
