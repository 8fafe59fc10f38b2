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

#include <nlohmann/json.hpp>

#include <string>

#include "autograd/autograd.h"

namespace sg::testing {

class GoldenCase {
 public:
  GoldenCase(std::string file, std::string name, nlohmann::json data);
  Tensor input(const std::string& name) const;
  Tensor output(const std::string& name = "out") const;
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
const GoldenCase& golden(const std::string& file, const std::string& name);

// Reads {"shape", "dtype", "data"} into a tensor.
Tensor tensor_from_json(const nlohmann::json& j);

}  // namespace sg::testing
