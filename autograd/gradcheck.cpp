#include "autograd/gradcheck.h"

#include <cmath>

#include "autograd/factory.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"

namespace sg {

namespace {

// L = Σ f(inputs) ⊙ v, evaluated without recording a graph.
double weighted_output(const GradcheckFn& fn, const std::vector<Tensor>& inputs, const Tensor& v) {
  NoGradGuard no_grad;
  return sum(mul(fn(inputs), v)).item<double>();
}

// Element `flat` of a (possibly strided) tensor, in row-major order.
double& element(const Tensor& t, int64_t flat) {
  int64_t offset = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    offset += (flat % t.size(d)) * t.stride(d);
    flat /= t.size(d);
  }
  return t.data_ptr<double>()[offset];
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    SG_CHECK(x.dtype() == kFloat64 && x.is_leaf(),
             "gradcheck: input {} must be a float64 leaf that requires grad, got {} {}", i,
             x.dtype(), x.is_leaf() ? "leaf" : "non-leaf");
  }

  // Analytic: one backward pass with gradient v.
  Tensor out = fn(inputs);
  SG_CHECK(out.dtype() == kFloat64, "gradcheck: fn must return float64, got {}", out.dtype());
  Generator gen(1234);
  Tensor v = randn(out.shape(), gen, kFloat64);
  for (const Tensor& x : inputs) {
    if (x.defined() && x.requires_grad()) x.impl()->grad.reset();
  }
  if (out.requires_grad()) out.backward(v);

  GradcheckResult result;
  int reported = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    Tensor analytic = x.grad().defined() ? x.grad() : zeros_like(x);
    for (int64_t k = 0; k < x.numel(); ++k) {
      // Numeric: central difference of L along element k.
      double& xk = element(x, k);
      const double saved = xk;
      xk = saved + options.eps;
      double plus = weighted_output(fn, inputs, v);
      xk = saved - options.eps;
      double minus = weighted_output(fn, inputs, v);
      xk = saved;
      double numeric = (plus - minus) / (2 * options.eps);
      double got = element(analytic, k);
      double err = std::abs(got - numeric);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (!(err <= options.atol + options.rtol * std::abs(numeric))) {
        result.ok = false;
        if (reported++ < options.max_reported) {
          result.report += fmt::format(
              "gradcheck: input {} (shape {}) element {}: analytic {:.8g} but numeric {:.8g} "
              "(difference {:.3g})\n",
              i, x.shape(), k, got, numeric, err);
        }
      }
    }
  }
  if (reported > options.max_reported) {
    result.report +=
        fmt::format("... and {} more mismatching elements\n", reported - options.max_reported);
  }
  return result;
}

}  // namespace sg
