// Golden values from PyTorch. scripts/make_golden.py (run with Debian's python3-torch) writes
// tests/golden/<family>.json; the tests read them here and never need Python.
//
//   const auto& c = sg::testing::golden("unary", "gelu_tanh");
//   EXPECT_TRUE(tensors_near(sg::gelu(c.input("x"), "tanh"), c.output("out"), 1e-6));
//
// File layout: {"format_version": 1, "torch_version": "...", "cases": {name: {"inputs": {n: T},
// "outputs": {n: T}, "params": {...}}}} with T = {"shape": [...], "dtype": "float32", "data":
// [...]}.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/autograd.h"

namespace sg::testing {

class GoldenCase {
 public:
  GoldenCase(std::string file, std::string name, nlohmann::json data);
  Tensor input(const std::string& name) const;
  Tensor output(const std::string& name = "out") const;
  const std::string& name() const { return name_; }
  std::vector<std::string> input_names() const;
  const nlohmann::json& params() const { return data_.at("params"); }
  template <typename T>
  T param(const std::string& name) const {
    return params().at(name).get<T>();
  }

 private:
  Tensor tensor_at(const char* section, const std::string& name) const;
  std::string file_, name_;
  nlohmann::json data_;
};

// The case `name` of tests/golden/<file>.json (files are read once and cached). A missing file or
// case fails with a hint to re-run scripts/make_golden.py.
// By value (string views): a reference to a temporary string argument would make GCC 14 warn
// that the returned reference may dangle, although it refers to the cache.
const GoldenCase& golden(std::string_view file, std::string_view name);

// A case's inputs by name, as backward_matches_pytorch hands them to the op.
using GoldenInputs = std::map<std::string, Tensor>;

// For a case written by scripts/golden/_common.py's backward_case: runs `op` on the case's inputs
// (the floating point ones as float64 leaves that require grad), compares its output with
// PyTorch's, backpropagates the stored upstream gradient "grad_out" and compares each leaf's
// gradient with PyTorch's "grad_<name>".
//
//   EXPECT_TRUE(backward_matches_pytorch(golden("reduce", "sum_grad_dim1"),
//                                        [](const GoldenInputs& in) { return in.at("x").sum(1);
//                                        }));
::testing::AssertionResult backward_matches_pytorch(
    const GoldenCase& c, const std::function<Tensor(const GoldenInputs&)>& op, double atol = 1e-12,
    double rtol = 1e-10);

// Every backward case of tests/golden/<file>.json (those written by backward_case) through
// backward_matches_pytorch, with the op that `ops` names for it; a backward case that `ops` does
// not name is a failure too, so a new golden case cannot go untested.
using GoldenOps = std::map<std::string, std::function<Tensor(const GoldenInputs&)>>;
void expect_backward_goldens(const std::string& file, const GoldenOps& ops, double atol = 1e-12,
                             double rtol = 1e-10);

// Reads {"shape", "dtype", "data"} into a tensor.
Tensor tensor_from_json(const nlohmann::json& j);

}  // namespace sg::testing
