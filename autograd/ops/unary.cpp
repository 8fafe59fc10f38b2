// Elementwise functions of one tensor, each with its derivative beside it.
// Float-only functions (exp, log, ...) turn int64/bool inputs into float32 first, as PyTorch does.
#include <cmath>
#include <limits>

#include "autograd/ops/internal.h"

namespace sg {

namespace {

// y = op(x) into a fresh contiguous tensor of x's shape and dtype.
Tensor apply(UnaryOp op, const Tensor& x, double alpha = 0.0, double beta = 0.0) {
  Tensor out = empty(x.shape(), x.options());
  backend_for(x.device()).unary(op, x, out, alpha, beta);
  return out;
}

Tensor as_floating(const Tensor& x) {
  return is_floating(x.dtype()) ? x : detail::convert(x, kFloat32);
}

void check_not_bool(std::string_view op, const Tensor& x) {
  SG_CHECK(x.dtype() != kBool, "{}: not defined for bool tensors (use logical_not)", op);
}

// gelu'(x), from the kernel. With grad mode on (a backward with create_graph) it is recorded with
// its own derivative, gelu''(x), composed from ops (so it differentiates again):
//   exact: gelu = x Φ(x), gelu' = Φ + x φ, gelu'' = φ (2 - x²), φ(x) = e^(-x²/2) / √(2π)
//   tanh:  gelu = x (1 + t) / 2 with t = tanh(u), u = c (x + a x³), c = √(2/π), a = 0.044715;
//          gelu'' = (1 - t²) (u' - x t u'² + x u'' / 2), u' = c (1 + 3a x²), u'' = 6 c a x
Tensor gelu_slope(const Tensor& x, bool use_tanh) {
  Tensor slope = apply(use_tanh ? UnaryOp::GeluTanhGrad : UnaryOp::GeluGrad, x);
  return record("gelu_backward", slope, {x}, [sx = SavedTensor(x), use_tanh](const Tensor& gg) {
    const Tensor& v = sx.get();
    if (!use_tanh) {
      const double inv_sqrt_2pi = 0.3989422804014327;
      Tensor phi = exp(v * v * -0.5) * inv_sqrt_2pi;
      return Grads{gg * phi * (2.0 - v * v)};
    }
    const double c = 0.7978845608028654, a = 0.044715;
    Tensor t = tanh((v + v * v * v * a) * c);
    Tensor du = (v * v * (3.0 * a) + 1.0) * c;
    Tensor d2u = v * (6.0 * c * a);
    return Grads{gg * (1.0 - t * t) * (du - v * t * du * du + v * d2u * 0.5)};
  });
}

}  // namespace

Tensor neg(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("neg");
  check_not_bool("neg", x);
  return record("neg", apply(UnaryOp::Neg, x), {x}, [](const Tensor& g) { return Grads{-g}; });
}

Tensor exp(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("exp");
  Tensor xf = as_floating(x);
  Tensor y = apply(UnaryOp::Exp, xf);
  // d/dx e^x = e^x: the output itself
  return record("exp", y, {x},
                [sy = SavedTensor::output(y)](const Tensor& g) { return Grads{g * sy.get()}; });
}

Tensor log(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("log");
  Tensor xf = as_floating(x);
  return record("log", apply(UnaryOp::Log, xf), {x},
                [sx = SavedTensor(xf)](const Tensor& g) { return Grads{g / sx.get()}; });
}

Tensor sqrt(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("sqrt");
  Tensor y = apply(UnaryOp::Sqrt, as_floating(x));
  // d/dx √x = 1 / (2√x)
  return record("sqrt", y, {x}, [sy = SavedTensor::output(y)](const Tensor& g) {
    return Grads{g / (sy.get() * 2.0)};
  });
}

Tensor rsqrt(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("rsqrt");
  Tensor y = apply(UnaryOp::Rsqrt, as_floating(x));
  // d/dx x^(-1/2) = -1/2 x^(-3/2) = -y³/2
  return record("rsqrt", y, {x}, [sy = SavedTensor::output(y)](const Tensor& g) {
    const Tensor& r = sy.get();
    return Grads{g * r * r * r * -0.5};
  });
}

Tensor abs(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("abs");
  check_not_bool("abs", x);
  return record("abs", apply(UnaryOp::Abs, x), {x}, [sx = SavedTensor(x)](const Tensor& g) {
    return Grads{g * sign(sx.get())};  // the kink at 0 gets gradient 0, as in PyTorch
  });
}

Tensor sign(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("sign");
  check_not_bool("sign", x);
  return apply(UnaryOp::Sign, x);  // piecewise constant: no gradient, so nothing is recorded
}

Tensor tanh(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("tanh");
  Tensor y = apply(UnaryOp::Tanh, as_floating(x));
  return record("tanh", y, {x}, [sy = SavedTensor::output(y)](const Tensor& g) {
    const Tensor& t = sy.get();
    return Grads{g * (1.0 - t * t)};
  });
}

Tensor sigmoid(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("sigmoid");
  Tensor y = apply(UnaryOp::Sigmoid, as_floating(x));
  return record("sigmoid", y, {x}, [sy = SavedTensor::output(y)](const Tensor& g) {
    const Tensor& s = sy.get();
    return Grads{g * s * (1.0 - s)};
  });
}

Tensor relu(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("relu");
  check_not_bool("relu", x);
  Tensor y = apply(UnaryOp::Relu, x);
  // The gradient flows where the output is not <= 0 (0 at the kink; a NaN passes g on, as in
  // PyTorch): where(y <= 0, 0, g) as one kernel pass over g and y (the composition would write a
  // bool mask, then read it back with g: half as much memory traffic again on [tokens, d_ff]).
  return record("relu", y, {x}, [sy = SavedTensor::output(y)](const Tensor& g) {
    const Tensor& out = sy.get();
    // create_graph: the same selection as a recorded op (d/dg of it is the same mask).
    if (is_grad_enabled()) return Grads{where(out.le(0.0), zeros({}, g.options()), g)};
    Tensor dx = empty(out.shape(), g.options());
    backend_for(g.device()).binary(BinaryOp::ReluGrad, g, out, dx);
    return Grads{dx};
  });
}

Tensor gelu(const Tensor& x, std::string_view approximate, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("gelu");
  SG_CHECK(approximate == "none" || approximate == "tanh",
           "gelu: approximate must be \"none\" or \"tanh\", got \"{}\"", approximate);
  const bool use_tanh = approximate == "tanh";
  Tensor xf = as_floating(x);
  Tensor y = apply(use_tanh ? UnaryOp::GeluTanh : UnaryOp::Gelu, xf);
  return record(use_tanh ? "gelu_tanh" : "gelu", y, {x},
                [sx = SavedTensor(xf), use_tanh](const Tensor& g) {
                  return Grads{g * gelu_slope(sx.get(), use_tanh)};
                });
}

Tensor pow(const Tensor& x, double exponent, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("pow");
  Tensor xf = as_floating(x);
  Tensor y = apply(UnaryOp::Pow, xf, exponent);
  // d/dx x^p = p x^(p-1)
  return record("pow", y, {x}, [sx = SavedTensor(xf), exponent](const Tensor& g) {
    if (exponent == 0.0) return Grads{zeros_like(g)};
    return Grads{g * pow(sx.get(), exponent - 1.0) * exponent};
  });
}

Tensor square(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("square");
  check_not_bool("square", x);
  return record("square", apply(UnaryOp::Square, x), {x},
                [sx = SavedTensor(x)](const Tensor& g) { return Grads{g * sx.get() * 2.0}; });
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("clamp");
  SG_CHECK(min.has_value() || max.has_value(), "clamp: at least one of min and max must be given");
  check_not_bool("clamp", x);
  const double lo = min.value_or(-std::numeric_limits<double>::infinity());
  const double hi = max.value_or(std::numeric_limits<double>::infinity());
  // An integer tensor clamped to a fraction is promoted to float32, as PyTorch does, not clamped
  // to a bound its dtype cannot hold (arange(4).clamp(0.5) is [0.5, 1, 2, 3]).
  // (Whole bounds past int64's range are its own bounds, in the kernel.)
  const auto is_fraction = [](double v) { return std::isfinite(v) && std::floor(v) != v; };
  const bool fractional = (min && is_fraction(lo)) || (max && is_fraction(hi));
  if (!x.is_floating_point() && fractional) return clamp(x.to(kFloat32), min, max, site);
  Tensor y = apply(UnaryOp::Clamp, x, lo, hi);
  // gradient passes where the input was inside [min, max]
  return record("clamp", y, {x}, [sx = SavedTensor(x), lo, hi](const Tensor& g) {
    const Tensor& v = sx.get();
    return Grads{g * logical_and(v.ge(lo), v.le(hi))};
  });
}

Tensor logical_not(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("logical_not");
  Tensor out = empty(x.shape(), TensorOptions(kBool).device(x.device()));
  backend_for(x.device()).unary(UnaryOp::LogicalNot, x, out, 0.0, 0.0);
  return out;
}

}  // namespace sg
