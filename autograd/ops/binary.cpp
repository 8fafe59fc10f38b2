// Elementwise functions of two tensors, with NumPy broadcasting and type promotion.
//
// Both operands are viewed at the broadcast shape (stride 0 where they repeat) and converted to
// the common dtype WITHOUT being recorded; the op records itself as one node on the original
// inputs, and the engine sums each gradient back to its input's shape (sum_to). Backward formulas
// use the original inputs (they broadcast against g by themselves), which keep their autograd
// identity, so that a graph of the gradient (create_graph) reaches them.
#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops/internal.h"

namespace sg {

namespace {

struct Operands {
  Tensor a, b;  // converted to `dtype` and viewed at `shape`
  DType dtype;
  Shape shape;
};

// PyTorch's result type: a 0-d tensor only decides the dtype when it is of a higher category
// (bool < integer < float) than the tensor with dims, so x_float32 * scalar_tensor(2.0, kFloat64)
// stays float32, but x_int64 * scalar_tensor(0.5) becomes float32.
DType result_type(const Tensor& a, const Tensor& b) {
  auto category = [](DType d) { return d == kBool ? 0 : (d == kInt64 ? 1 : 2); };
  if ((a.dim() == 0) == (b.dim() == 0)) return promote_types(a.dtype(), b.dtype());
  const Tensor& with_dims = a.dim() == 0 ? b : a;
  const Tensor& zero_dim = a.dim() == 0 ? a : b;
  if (category(zero_dim.dtype()) > category(with_dims.dtype())) {
    return promote_types(a.dtype(), b.dtype());
  }
  return with_dims.dtype();
}

// Checks devices, promotes dtypes, broadcasts shapes. Arithmetic on bools happens in int64.
Operands prepare(std::string_view op, const Tensor& a, const Tensor& b, bool arithmetic) {
  SG_CHECK(a.defined() && b.defined(), "{}: an operand is an undefined tensor", op);
  detail::check_same_device(op, {a, b});
  Operands o;
  o.dtype = result_type(a, b);
  if (arithmetic && o.dtype == kBool) o.dtype = kInt64;
  o.shape = broadcast_shapes(op, a.shape(), b.shape());
  o.a = detail::broadcast_view(detail::convert(a, o.dtype), o.shape);
  o.b = detail::broadcast_view(detail::convert(b, o.dtype), o.shape);
  return o;
}

// b scaled by alpha, as a kernel input (not part of the graph: the op's node covers it).
Operands scaled(Operands o, double alpha) {
  if (alpha != 1.0) {
    NoGradGuard no_grad;
    o.b = o.b * alpha;
  }
  return o;
}

Tensor apply(BinaryOp op, const Operands& o) {
  DType out_dtype = is_comparison(op) ? kBool : o.dtype;
  Tensor out = empty(o.shape, TensorOptions(out_dtype).device(o.a.device()));
  backend_for(out.device()).binary(op, o.a, o.b, out);
  return out;
}

// The comparisons and the logical ops, all eight: a bool result and no gradient. Named, in
// errors and in the profiler, by their op (op_name: "eq", "logical_and", ...).
Tensor compare(BinaryOp op, const Tensor& a, const Tensor& b, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP(op_name(op));
  return apply(op, prepare(op_name(op), a, b, /*arithmetic=*/false));
}

// Gradient of maximum/minimum for the input that won: g where it won, g/2 on ties, 0 where it lost.
Tensor winner_grad(const Tensor& g, const Tensor& self, const Tensor& other, bool is_max) {
  Tensor won = is_max ? self.gt(other) : self.lt(other);
  Tensor tie = self.eq(other);
  return g * won + g * tie * 0.5;
}

}  // namespace

Tensor scalar_like(const Tensor& x, double value, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("scalar_like");
  DType dtype = x.dtype();
  // A whole number an int64 holds stays an integer; anything else (a fraction, 1e19, inf, NaN)
  // is a float, which promotes the integer tensor as PyTorch does, instead of a wrapped cast.
  if (!is_floating(dtype)) dtype = holds_int64(value) ? kInt64 : kFloat32;
  return scalar_tensor(value, TensorOptions(dtype).device(x.device()));
}

Tensor add(const Tensor& a, const Tensor& b, double alpha, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("add");
  Operands o = prepare("add", a, b, true);
  Tensor y = apply(BinaryOp::Add, scaled(o, alpha));
  // y = a + alpha b
  return record("add", y, {a, b}, [alpha](const Tensor& g) {
    return Grads{g, alpha == 1.0 ? g : g * alpha};
  });
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("sub");
  Operands o = prepare("sub", a, b, true);
  Tensor y = apply(BinaryOp::Sub, scaled(o, alpha));
  // y = a - alpha b
  return record("sub", y, {a, b}, [alpha](const Tensor& g) { return Grads{g, g * -alpha}; });
}

Tensor mul(const Tensor& a, const Tensor& b, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("mul");
  Operands o = prepare("mul", a, b, true);
  bool need_a = a.requires_grad(), need_b = b.requires_grad();
  // y = a ⊙ b: each input's gradient is g times the other input
  return record("mul", apply(BinaryOp::Mul, o), {a, b},
                [sa = SavedTensor(need_b ? a : Tensor()), sb = SavedTensor(need_a ? b : Tensor()),
                 need_a, need_b](const Tensor& g) {
                  return Grads{need_a ? g * sb.get() : Tensor(), need_b ? g * sa.get() : Tensor()};
                });
}

Tensor div(const Tensor& a, const Tensor& b, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("div");
  Operands o = prepare("div", a, b, true);
  if (!is_floating(o.dtype)) {  // true division, as Python's / and torch.div
    o.dtype = kFloat32;
    o.a = detail::convert(o.a, kFloat32);
    o.b = detail::convert(o.b, kFloat32);
  }
  Tensor y = apply(BinaryOp::Div, o);
  bool need_b = b.requires_grad();
  // y = a / b: dy/da = 1/b, dy/db = -a/b² = -y/b
  return record("div", y, {a, b},
                [sb = SavedTensor(b), sy = SavedTensor::output(need_b ? y : Tensor()),
                 need_b](const Tensor& g) {
                  Tensor ga = g / sb.get();
                  return Grads{ga, need_b ? -ga * sy.get() : Tensor()};
                });
}

Tensor pow(const Tensor& a, const Tensor& b, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("pow");
  Operands o = prepare("pow", a, b, true);
  if (!is_floating(o.dtype)) {
    o.dtype = kFloat32;
    o.a = detail::convert(o.a, kFloat32);
    o.b = detail::convert(o.b, kFloat32);
  }
  Tensor y = apply(BinaryOp::Pow, o);
  // y = a^b: dy/da = b a^(b-1), dy/db = y ln a (taken as 0 where a == 0, as in PyTorch)
  return record(
      "pow", y, {a, b},
      [sa = SavedTensor(a), sb = SavedTensor(b), sy = SavedTensor::output(y)](const Tensor& g) {
        const Tensor &base = sa.get(), &exponent = sb.get();
        Tensor ga = g * exponent * pow(base, exponent - 1.0);
        Tensor gb = g * sy.get() * log(base).masked_fill(base.eq(0.0), 0.0);
        return Grads{ga, gb};
      });
}

Tensor maximum(const Tensor& a, const Tensor& b, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("maximum");
  Operands o = prepare("maximum", a, b, true);
  return record("maximum", apply(BinaryOp::Maximum, o), {a, b},
                [sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g) {
                  return Grads{winner_grad(g, sa.get(), sb.get(), true),
                               winner_grad(g, sb.get(), sa.get(), true)};
                });
}

Tensor minimum(const Tensor& a, const Tensor& b, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("minimum");
  Operands o = prepare("minimum", a, b, true);
  return record("minimum", apply(BinaryOp::Minimum, o), {a, b},
                [sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g) {
                  return Grads{winner_grad(g, sa.get(), sb.get(), false),
                               winner_grad(g, sb.get(), sa.get(), false)};
                });
}

Tensor eq(const Tensor& a, const Tensor& b, CallSite site) {
  return compare(BinaryOp::Eq, a, b, site);
}
Tensor ne(const Tensor& a, const Tensor& b, CallSite site) {
  return compare(BinaryOp::Ne, a, b, site);
}
Tensor lt(const Tensor& a, const Tensor& b, CallSite site) {
  return compare(BinaryOp::Lt, a, b, site);
}
Tensor le(const Tensor& a, const Tensor& b, CallSite site) {
  return compare(BinaryOp::Le, a, b, site);
}
Tensor gt(const Tensor& a, const Tensor& b, CallSite site) {
  return compare(BinaryOp::Gt, a, b, site);
}
Tensor ge(const Tensor& a, const Tensor& b, CallSite site) {
  return compare(BinaryOp::Ge, a, b, site);
}
Tensor logical_and(const Tensor& a, const Tensor& b, CallSite site) {
  return compare(BinaryOp::LogicalAnd, a, b, site);
}
Tensor logical_or(const Tensor& a, const Tensor& b, CallSite site) {
  return compare(BinaryOp::LogicalOr, a, b, site);
}

}  // namespace sg
