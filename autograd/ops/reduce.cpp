// Reductions: sum, mean, var, amax/amin, max/min along a dim (with indices), argmax/argmin, and
// sum_to, the engine's unbroadcast.
//
// Every reduction runs through one backend kernel, backend.reduce(op, x, k, out), which reduces
// the LAST k dims of x. So the forward first permutes x so the reduced dims come last. A permute
// is a view (only the strides move), so nothing is copied:
//
//   x [2, 3, 4], dims {1}  ->  x viewed as [2, 4, 3]  ->  reduce the last 1 dim  ->  out [2, 4]
//
// Backward of a reduction puts the reduced dims back as size 1 (the keepdim shape) and then
// broadcasts: every input element that went into one output element receives that element's g.
#include <algorithm>

#include "autograd/grad_mode.h"
#include "autograd/ops/internal.h"

namespace sg {

namespace {

// The dims a reduction runs over, sorted and non-negative. An empty list means all dims.
std::vector<int64_t> reduced_dims_of(std::string_view op, const std::vector<int64_t>& dims,
                                     int64_t ndim) {
  std::vector<int64_t> reduced;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) reduced.push_back(d);
    return reduced;
  }
  for (int64_t d : dims) {
    int64_t nd = normalize_dim(op, d, ndim);
    SG_CHECK(std::find(reduced.begin(), reduced.end(), nd) == reduced.end(),
             "{}: dim {} appears more than once in dims {}", op, nd, dims);
    reduced.push_back(nd);
  }
  std::sort(reduced.begin(), reduced.end());
  return reduced;
}

bool contains(const std::vector<int64_t>& dims, int64_t d) {
  return std::find(dims.begin(), dims.end(), d) != dims.end();
}

// x's shape with the reduced dims set to 1 (keepdim) or removed.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& reduced, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (!contains(reduced, d)) {
      out.push_back(shape[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

// Number of elements that go into one output element.
int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& reduced) {
  if (shape.empty()) return 1;  // a 0-d tensor is one element
  int64_t n = 1;
  for (int64_t d : reduced) n *= shape[d];
  return n;
}

// Runs backend.reduce over `reduced` dims of x (no graph recorded). Returns the result in the
// keepdim shape, so callers can broadcast against x; `indices` (Max/Min over one dim) likewise.
Tensor run_reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& reduced,
                  const Tensor& indices = Tensor()) {
  // The permuted view [kept..., reduced...]: same storage, strides reordered.
  Shape shape, outer;
  Strides strides;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!contains(reduced, d)) {
      shape.push_back(x.size(d));
      strides.push_back(x.stride(d));
      outer.push_back(x.size(d));
    }
  }
  for (int64_t d : reduced) {
    shape.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  Tensor permuted = detail::make_view(x, shape, strides, x.storage_offset());
  Tensor out = empty(outer, x.options());
  backend_for(x.device())
      .reduce(op, permuted, static_cast<int64_t>(reduced.size()), out,
              indices.defined() ? indices.view(outer) : Tensor());
  return out.view(reduced_shape(x.shape(), reduced, /*keepdim=*/true));
}

// g (shaped like the output) seen in the keepdim shape, so it broadcasts against the input.
Tensor with_kept_dims(const Tensor& g, const Shape& keep_shape) { return g.reshape(keep_shape); }

// Max and min need at least one element: there is no identity value to return for an empty dim.
void check_not_empty(std::string_view op, const Tensor& x, const std::vector<int64_t>& reduced) {
  for (int64_t d : reduced) {
    SG_CHECK(x.size(d) > 0, "{}: cannot reduce over dim {} of size 0 (shape {})", op, d, x.shape());
  }
  SG_CHECK(x.dtype() != kBool, "{}: not defined for bool tensors", op);
}

}  // namespace

// ---- sum ----
// y = Σ x over dims. Backward: each x element contributed once to its output element, so
// dx = g broadcast back over the reduced dims.
Tensor sum(const Tensor& x, const Dims& dims, bool keepdim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("sum");
  // A 0-d tensor is its own sum; treat it as [1] so the kernel always has a dim to walk.
  if (x.dim() == 0) {
    (void)reduced_dims_of("sum", dims.vec(), 0);
    return sum(x.view({1}), {}, false);
  }
  std::vector<int64_t> reduced = reduced_dims_of("sum", dims.vec(), x.dim());
  // Booleans count: sum of a bool or int64 tensor is int64, as in PyTorch.
  Tensor input = is_floating(x.dtype()) ? x : detail::convert(x, kInt64);
  Tensor out = run_reduce(ReduceOp::Sum, input, reduced);
  if (!keepdim) out = out.view(reduced_shape(x.shape(), reduced, false));

  Shape keep_shape = reduced_shape(x.shape(), reduced, true);
  return record("sum", out, {x}, [keep_shape, x_shape = x.shape()](const Tensor& g) {
    return Grads{with_kept_dims(g, keep_shape).expand(x_shape)};
  });
}

// ---- mean ----
// y = Σ x / n: composed from sum and a division, so its gradient g / n needs no code here.
Tensor mean(const Tensor& x, const Dims& dims, bool keepdim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("mean");
  detail::check_not_bfloat16("mean", {x});
  SG_CHECK(x.is_floating_point(), "mean: expected a floating point tensor, got {}", x.dtype());
  std::vector<int64_t> reduced = reduced_dims_of("mean", dims.vec(), x.dim());
  const int64_t n = reduced_count(x.shape(), reduced);
  return sum(x, dims, keepdim) / static_cast<double>(n);  // n == 0 gives NaN, as in PyTorch
}

// ---- var ----
// var = Σ (x - mean)² / (n - correction). Composed from mean, sub, mul and sum, so autograd
// derives dx = 2 g (x - mean) / (n - correction) by itself (the mean's own gradient term sums to
// zero). Two passes over the data, as in the textbook formula; no catastrophic cancellation.
Tensor var(const Tensor& x, const Dims& dims, int64_t correction, bool keepdim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("var");
  detail::check_not_bfloat16("var", {x});
  SG_CHECK(x.is_floating_point(), "var: expected a floating point tensor, got {}", x.dtype());
  std::vector<int64_t> reduced = reduced_dims_of("var", dims.vec(), x.dim());
  const int64_t n = reduced_count(x.shape(), reduced);
  Tensor centered = x - mean(x, dims, /*keepdim=*/true);
  // PyTorch clamps the divisor at 0: a single element with correction 1 gives 0/0 = NaN.
  const double divisor = static_cast<double>(std::max<int64_t>(n - correction, 0));
  return sum(centered * centered, dims, keepdim) / divisor;
}

// ---- amax / amin ----
// y = the largest (smallest) value over dims. Backward (as PyTorch's amax): g goes to every input
// equal to y, split evenly among ties, so dx = g ⊙ [x == y] / count(x == y).
namespace {
Tensor extreme(std::string_view op, ReduceOp kind, const Tensor& x,
               const std::vector<int64_t>& dims, bool keepdim) {
  detail::check_not_bfloat16(op, {x});
  if (x.dim() == 0) {
    (void)reduced_dims_of(op, dims, 0);
    SG_CHECK(x.dtype() != kBool, "{}: not defined for bool tensors", op);
    return extreme(op, kind, x.view({1}), {}, false);
  }
  std::vector<int64_t> reduced = reduced_dims_of(op, dims, x.dim());
  check_not_empty(op, x, reduced);
  Tensor out_kept = run_reduce(kind, x, reduced);
  Tensor out = keepdim ? out_kept : out_kept.view(reduced_shape(x.shape(), reduced, false));

  return record(op, out, {x},
                [sx = SavedTensor(x), sy = SavedTensor(out_kept), reduced](const Tensor& g) {
                  const Tensor& x_ = sx.get();
                  const Tensor& y = sy.get();
                  Tensor is_extreme = eq(x_, y).to(g.dtype());
                  Tensor ties = sum(is_extreme, reduced, /*keepdim=*/true);
                  return Grads{with_kept_dims(g, y.shape()) * is_extreme / ties};
                });
}
}  // namespace

Tensor amax(const Tensor& x, const Dims& dims, bool keepdim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("amax");
  return extreme("amax", ReduceOp::Max, x, dims.vec(), keepdim);
}
Tensor amin(const Tensor& x, const Dims& dims, bool keepdim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("amin");
  return extreme("amin", ReduceOp::Min, x, dims.vec(), keepdim);
}

// ---- max / min along one dim, with indices ----
// values = the extreme along dim, indices = where it is (the first one on ties). Backward: g goes
// to exactly that index (unlike amax, no splitting), scattered into zeros: dx = scatter_add(g).
namespace {
std::pair<Tensor, Tensor> extreme_along(std::string_view op, ReduceOp kind, const Tensor& x,
                                        int64_t dim, bool keepdim) {
  detail::check_not_bfloat16(op, {x});
  if (x.dim() == 0) {
    normalize_dim(op, dim, 0);
    SG_CHECK(x.dtype() != kBool, "{}: not defined for bool tensors", op);
    return extreme_along(op, kind, x.view({1}), 0, false);
  }
  const int64_t d = normalize_dim(op, dim, x.dim());
  check_not_empty(op, x, {d});
  Shape keep_shape = reduced_shape(x.shape(), {d}, true);
  Tensor indices = empty(keep_shape, TensorOptions(kInt64).device(x.device()));
  Tensor values = run_reduce(kind, x, {d}, indices);
  if (!keepdim) {
    Shape squeezed = reduced_shape(x.shape(), {d}, false);
    values = values.view(squeezed);
    indices = indices.view(squeezed);
  }
  values = record(op, values, {x},
                  [si = SavedTensor(indices), keep_shape, d, x_shape = x.shape()](const Tensor& g) {
                    Tensor index = si.get().reshape(keep_shape).contiguous();
                    Tensor dx = zeros(x_shape, g.options());
                    {
                      NoGradGuard no_grad;
                      backend_for(g.device())
                          .scatter_add(dx, d, index, with_kept_dims(g, keep_shape).contiguous());
                    }
                    // create_graph: dx is linear in g; its adjoint picks gg at the indices.
                    return Grads{detail::linear_in_grad(
                        "max_backward", dx, g, [index, d, out_shape = g.shape()](const Tensor& gg) {
                          return gather(gg, d, index).reshape(out_shape);
                        })};
                  });
  return {values, indices};
}
}  // namespace

std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("max");
  return extreme_along("max", ReduceOp::Max, x, dim, keepdim);
}
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("min");
  return extreme_along("min", ReduceOp::Min, x, dim, keepdim);
}

// ---- argmax / argmin: the indices alone, int64, never differentiable ----
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("argmax");
  NoGradGuard no_grad;  // the values are thrown away: record nothing for them
  return extreme_along("argmax", ReduceOp::Max, x, dim, keepdim).second;
}
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("argmin");
  NoGradGuard no_grad;
  return extreme_along("argmin", ReduceOp::Min, x, dim, keepdim).second;
}

// ---- sum_to: the engine's unbroadcast ----
// If x was computed from a tensor of `shape` by broadcasting, its gradient must be summed back:
// over the leading dims broadcasting added, and over the dims where `shape` has size 1.
//   sum_to(g [4, 2, 3], {2, 1})  ->  sum over dims 0 and 2  ->  [2, 1]
// Composed from sum and view, so its own gradient (g expanded back to x's shape) comes for free.
Tensor sum_to(const Tensor& x, const Shape& shape, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("sum_to");
  detail::check_not_bfloat16("sum_to", {x});
  // --8<-- [start:ex02.sum_to]
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  SG_CHECK(lead >= 0, "sum_to: cannot sum shape {} to the larger shape {}", x.shape(), shape);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < lead) {
      dims.push_back(d);
      continue;
    }
    const int64_t target = shape[d - lead];
    SG_CHECK(target == x.size(d) || target == 1,
             "sum_to: cannot sum shape {} to {} (dim {}: {} vs {})", x.shape(), shape, d, x.size(d),
             target);
    if (target == 1 && x.size(d) != 1) dims.push_back(d);
  }
  if (dims.empty()) return x;  // nothing was broadcast (and an empty list would mean "all")
  return sum(x, dims, /*keepdim=*/true).view(shape);
  // --8<-- [end:ex02.sum_to]
}

}  // namespace sg
