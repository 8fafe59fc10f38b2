#include "tests/support/op_info.h"

#include <optional>

namespace sg::testing {

std::vector<Tensor> OpInfo::sample_inputs(DType dtype, uint64_t seed) const {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Generator gen(seed + i);
    Tensor x = randn(shapes[i], gen, kFloat64);
    if (domains[i] == Domain::kPositive) x = x.abs() + 0.5;
    if (domains[i] == Domain::kAwayFromKinks) x = x + sign(x) * 0.05;
    if (dtype == kInt64) x = (x * 3.0).to(kInt64);  // small integers of both signs
    x = x.to(dtype);
    if (is_floating(dtype)) x.requires_grad_(true);
    inputs.push_back(x);
  }
  return inputs;
}

namespace {

using In = const std::vector<Tensor>&;

OpInfo unary(std::string name, std::function<Tensor(const Tensor&)> f, Domain domain = Domain::kAny,
             bool integers = false) {
  return {std::move(name), "unary",  {"x"},   [f](In in) { return f(in[0]); },
          {{3, 4}},        {domain}, integers};
}

OpInfo binary(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> f,
              Domain a_domain = Domain::kAny, Domain b_domain = Domain::kAny,
              bool integers = false) {
  return {std::move(name),
          "binary",
          {"a", "b"},
          [f](In in) { return f(in[0], in[1]); },
          {{3, 1, 4}, {5, 1}},
          {a_domain, b_domain},
          integers};
}

}  // namespace

const std::vector<OpInfo>& elementwise_ops() {
  using D = Domain;
  static const std::vector<OpInfo> ops = {
      unary(
          "neg", [](const Tensor& x) { return neg(x); }, D::kAny, true),
      unary("exp", [](const Tensor& x) { return exp(x); }),
      unary(
          "log", [](const Tensor& x) { return log(x); }, D::kPositive),
      unary(
          "sqrt", [](const Tensor& x) { return sqrt(x); }, D::kPositive),
      unary(
          "rsqrt", [](const Tensor& x) { return rsqrt(x); }, D::kPositive),
      unary(
          "abs", [](const Tensor& x) { return abs(x); }, D::kAwayFromKinks, true),
      unary("tanh", [](const Tensor& x) { return tanh(x); }),
      unary("sigmoid", [](const Tensor& x) { return sigmoid(x); }),
      unary(
          "relu", [](const Tensor& x) { return relu(x); }, D::kAwayFromKinks, true),
      unary("gelu", [](const Tensor& x) { return gelu(x); }),
      unary("gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }),
      unary(
          "pow_2_5", [](const Tensor& x) { return pow(x, 2.5); }, D::kPositive),
      unary(
          "pow_neg1", [](const Tensor& x) { return pow(x, -1.0); }, D::kPositive),
      unary(
          "square", [](const Tensor& x) { return square(x); }, D::kAny, true),
      unary(
          "clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.7); }, D::kAwayFromKinks, true),
      unary(
          "clamp_min", [](const Tensor& x) { return clamp(x, 0.1, std::nullopt); },
          D::kAwayFromKinks, true),
      binary(
          "add_broadcast", [](const Tensor& a, const Tensor& b) { return a + b; }, D::kAny, D::kAny,
          true),
      binary(
          "sub_broadcast", [](const Tensor& a, const Tensor& b) { return a - b; }, D::kAny, D::kAny,
          true),
      binary(
          "mul_broadcast", [](const Tensor& a, const Tensor& b) { return a * b; }, D::kAny, D::kAny,
          true),
      binary(
          "div_broadcast", [](const Tensor& a, const Tensor& b) { return a / b; }, D::kAny,
          D::kPositive),
      binary("add_alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, 2.5); }),
      binary(
          "pow_tensor", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, D::kPositive,
          D::kAny),
      binary(
          "maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, D::kAny,
          D::kAny, true),
      binary(
          "minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, D::kAny,
          D::kAny, true),
  };
  return ops;
}

}  // namespace sg::testing
