#include "tests/support/golden.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>

#include "tests/support/testing.h"

namespace sg::testing {

namespace {
constexpr int kGoldenFormatVersion = 1;
constexpr const char* kHint = "re-run `python3 scripts/make_golden.py` (needs python3-torch)";

DType dtype_from_name(const std::string& name) {
  if (name == "float32") return kFloat32;
  if (name == "float64") return kFloat64;
  if (name == "int64") return kInt64;
  if (name == "bool") return kBool;
  SG_FAIL("golden: unknown dtype '{}'", name);
}
}  // namespace

Tensor tensor_from_json(const nlohmann::json& j) {
  Shape shape = j.at("shape").get<Shape>();
  DType dtype = dtype_from_name(j.at("dtype").get<std::string>());
  std::vector<double> values;
  for (const auto& v : j.at("data")) {
    if (v.is_string()) {  // "nan", "inf", "-inf": JSON has no literal for them
      std::string s = v.get<std::string>();
      values.push_back(s == "nan" ? NAN : (s == "inf" ? INFINITY : -INFINITY));
    } else if (v.is_boolean()) {
      values.push_back(v.get<bool>() ? 1.0 : 0.0);
    } else {
      values.push_back(v.get<double>());
    }
  }
  return from_vector(values, shape, dtype);
}

GoldenCase::GoldenCase(std::string file, std::string name, nlohmann::json data)
    : file_(std::move(file)), name_(std::move(name)), data_(std::move(data)) {}

Tensor GoldenCase::tensor_at(const char* section, const std::string& name) const {
  SG_CHECK(data_.contains(section) && data_.at(section).contains(name),
           "golden: case '{}' of {}.json has no {} '{}'; {}", name_, file_, section, name, kHint);
  return tensor_from_json(data_.at(section).at(name));
}

Tensor GoldenCase::input(const std::string& name) const { return tensor_at("inputs", name); }
Tensor GoldenCase::output(const std::string& name) const { return tensor_at("outputs", name); }

std::vector<std::string> GoldenCase::input_names() const {
  std::vector<std::string> names;
  for (const auto& [name, value] : data_.at("inputs").items()) names.push_back(name);
  return names;
}

::testing::AssertionResult backward_matches_pytorch(
    const GoldenCase& c, const std::function<Tensor(const GoldenInputs&)>& op, double atol,
    double rtol) {
  const auto leaf_names = c.param<std::vector<std::string>>("grad_inputs");
  auto is_leaf = [&](const std::string& name) {
    return std::find(leaf_names.begin(), leaf_names.end(), name) != leaf_names.end();
  };
  GoldenInputs inputs;
  for (const std::string& name : c.input_names()) {
    if (name == "grad_out") continue;
    Tensor t = c.input(name);
    if (is_leaf(name)) t = t.to(kFloat64).requires_grad_(true);
    inputs[name] = t;
  }
  Tensor out = op(inputs);
  if (auto same = tensors_near(out.detach(), c.output("out"), atol, rtol); !same) {
    return ::testing::AssertionFailure()
           << c.name() << ": output differs from PyTorch's; " << same.message();
  }
  out.backward(c.input("grad_out"));
  for (const std::string& name : leaf_names) {
    const Tensor& leaf = inputs.at(name);
    // No gradient at all is a zero gradient (PyTorch's None, stored as zeros).
    Tensor grad = leaf.grad().defined() ? leaf.grad() : zeros(leaf.shape(), kFloat64);
    if (auto same = tensors_near(grad, c.output("grad_" + name), atol, rtol); !same) {
      return ::testing::AssertionFailure() << c.name() << ": the gradient of " << name
                                           << " differs from PyTorch's; " << same.message();
    }
  }
  return ::testing::AssertionSuccess();
}

namespace {
using GoldenFile = std::map<std::string, std::unique_ptr<GoldenCase>>;

const GoldenFile& golden_file(std::string_view file) {  // by value, as golden()
  static std::map<std::string, GoldenFile> cache;
  auto& cases = cache[std::string(file)];
  if (cases.empty()) {
    std::string path = std::string(SG_GOLDEN_DIR) + "/" + std::string(file) + ".json";
    std::ifstream in(path);
    SG_CHECK(in.good(), "golden: cannot open {}; {}", path, kHint);
    nlohmann::json j = nlohmann::json::parse(in);
    SG_CHECK(j.value("format_version", 0) == kGoldenFormatVersion,
             "golden: {} has format_version {} but the tests expect {}; {}", path,
             j.value("format_version", 0), kGoldenFormatVersion, kHint);
    for (auto& [case_name, data] : j.at("cases").items()) {
      cases[case_name] = std::make_unique<GoldenCase>(std::string(file), case_name, data);
    }
  }
  return cases;
}
}  // namespace

const GoldenCase& golden(std::string_view file, std::string_view name) {
  const GoldenFile& cases = golden_file(file);
  auto it = cases.find(std::string(name));
  SG_CHECK(it != cases.end(), "golden: {}.json has no case '{}'; {}", file, name, kHint);
  return *it->second;
}

void expect_backward_goldens(const std::string& file, const GoldenOps& ops, double atol,
                             double rtol) {
  for (const auto& [name, c] : golden_file(file)) {
    if (!c->params().contains("grad_inputs")) continue;  // a forward-only case
    auto op = ops.find(name);
    if (op == ops.end()) {
      ADD_FAILURE() << file << ".json: backward case '" << name << "' has no op in the test";
      continue;
    }
    EXPECT_TRUE(backward_matches_pytorch(*c, op->second, atol, rtol));
  }
  for (const auto& [name, op] : ops) (void)golden(file, name);  // fails on a missing case
}

}  // namespace sg::testing
