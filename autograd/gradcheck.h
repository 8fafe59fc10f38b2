// gradcheck: compares the gradients backward() computes with central differences, in float64.
//
//   auto x = sg::randn({3, 4}, sg::TensorOptions(sg::kFloat64).requires_grad(true));
//   auto result = sg::gradcheck([](const std::vector<sg::Tensor>& in) { return sg::tanh(in[0]); },
//                               {x});
//   if (!result.ok) fmt::print("{}\n", result.report);
//
// For a non-scalar output f(x), it checks the gradient of L = Σ f(x) ⊙ v for a fixed random v of
// f's shape (one backward pass, 2 forward passes per input element). To test an op on
// non-contiguous inputs, make the view inside fn: [](auto& in) { return sg::exp(in[0].t()); }.
//
// gradgradcheck checks second derivatives the same way: it takes the gradient of fn with
// create_graph (autograd/grad.h), seeded with a random v that is itself an input, and gradchecks
// that gradient as a function of the inputs and of v. So it tests that every backward formula of
// fn is recorded as differentiable ops, with respect to what it saved AND to the incoming gradient.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace sg {

struct GradcheckOptions {
  double eps = 1e-6;   // finite-difference step
  double atol = 1e-5;  // |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-3;
  int max_reported = 5;  // mismatching elements listed in the report
};

struct GradcheckResult {
  bool ok = true;
  std::string report;  // what failed: input, element index, analytic vs numeric
  double max_abs_error = 0;
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Inputs that require grad must be float64 leaves; the others are passed through unchanged.
GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

// Second derivatives of fn: the same inputs as gradcheck (float64 leaves where they require grad).
GradcheckResult gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {});

}  // namespace sg
