#include "tests/support/golden.h"

#include <fstream>
#include <map>
#include <memory>

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

const GoldenCase& golden(const std::string& file, const std::string& name) {
  static std::map<std::string, std::map<std::string, std::unique_ptr<GoldenCase>>> cache;
  auto& cases = cache[file];
  if (cases.empty()) {
    std::string path = std::string(SG_GOLDEN_DIR) + "/" + file + ".json";
    std::ifstream in(path);
    SG_CHECK(in.good(), "golden: cannot open {}; {}", path, kHint);
    nlohmann::json j = nlohmann::json::parse(in);
    SG_CHECK(j.value("format_version", 0) == kGoldenFormatVersion,
             "golden: {} has format_version {} but the tests expect {}; {}", path,
             j.value("format_version", 0), kGoldenFormatVersion, kHint);
    for (auto& [case_name, data] : j.at("cases").items()) {
      cases[case_name] = std::make_unique<GoldenCase>(file, case_name, data);
    }
  }
  auto it = cases.find(name);
  SG_CHECK(it != cases.end(), "golden: {}.json has no case '{}'; {}", file, name, kHint);
  return *it->second;
}

}  // namespace sg::testing
