#include "autograd/gradcheck.h"

#include <cmath>

#include "autograd/factory.h"
#include "autograd/grad.h"
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

GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options) {
  std::vector<size_t> differentiable;  // positions of the inputs that require grad
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) differentiable.push_back(i);
  }
  SG_CHECK(!differentiable.empty(), "gradgradcheck: no input requires grad");
  Tensor probe;
  {
    NoGradGuard no_grad;
    probe = fn(inputs);
  }
  SG_CHECK(probe.dtype() == kFloat64, "gradgradcheck: fn must return float64, got {}",
           probe.dtype());
  // The seed of the first backward, an input of the function checked below (fixed, random).
  Generator gen(4321);
  Tensor v = randn(probe.shape(), gen, TensorOptions(kFloat64).requires_grad(true));

  // first_grads(inputs..., v) = the gradients of Σ fn(inputs) ⊙ v, flattened and concatenated.
  // Grad mode is forced on inside: gradcheck evaluates it under NoGradGuard for the numeric side.
  GradcheckFn first_grads = [&](const std::vector<Tensor>& in) {
    GradModeGuard grad_mode(true);
    std::vector<Tensor> fn_inputs(in.begin(), in.end() - 1);
    std::vector<Tensor> wrt;
    for (size_t i : differentiable) wrt.push_back(fn_inputs[i]);
    std::vector<Tensor> grads = autograd::grad({fn(fn_inputs)}, wrt, {in.back()}, std::nullopt,
                                               /*create_graph=*/true, /*allow_unused=*/true);
    std::vector<Tensor> flat;
    for (size_t k = 0; k < grads.size(); ++k) {
      flat.push_back(grads[k].defined() ? grads[k].reshape({-1})
                                        : zeros({wrt[k].numel()}, kFloat64));
    }
    return cat(flat, 0);
  };
  std::vector<Tensor> extended = inputs;
  extended.push_back(v);
  GradcheckResult result = gradcheck(first_grads, extended, options);
  if (!result.ok) {
    result.report = fmt::format(
        "gradgradcheck: second derivatives (input {} is the first backward's grad_output):\n{}",
        inputs.size(), result.report);
  }
  return result;
}

}  // namespace sg
