#include "nn/capture_compare.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "autograd/error.h"
#include "autograd/grad_mode.h"

namespace sg::nn {

namespace {

std::vector<std::string> execution_order(const SafetensorsFile& reference) {
  std::vector<std::string> names;
  auto it = reference.metadata.find("order");
  if (it == reference.metadata.end()) {
    for (const auto& [name, tensor] : reference.tensors) names.push_back(name);
    return names;
  }
  std::stringstream in(it->second);
  for (std::string name; std::getline(in, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

const Tensor* find(const SafetensorsFile& file, const std::string& name) {
  for (const auto& [n, t] : file.tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

CaptureDifference compare_one(const std::string& name, const Tensor* a, const Tensor* b,
                              double atol, double rtol) {
  CaptureDifference d{.name = name};
  if (a == nullptr || b == nullptr) {
    d.diverges = true;
    d.problem = a == nullptr ? "missing from the reference" : "missing from the candidate";
    return d;
  }
  if (a->shape() != b->shape()) {
    d.diverges = true;
    d.problem = fmt::format("shapes differ: {} and {}", a->shape(), b->shape());
    return d;
  }
  NoGradGuard no_grad;
  const std::vector<double> x = a->to_vector<double>(), y = b->to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    const double diff = std::abs(x[i] - y[i]);
    // Equal values (the same infinity too) and NaN against NaN agree; otherwise an infinity or a
    // NaN on either side diverges: the tolerance test alone would pass inf against 0 (inf <= inf).
    const bool same = x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]));
    const bool close =
        std::isfinite(x[i]) && std::isfinite(y[i]) && diff <= atol + rtol * std::abs(x[i]);
    if (!same && !close) d.diverges = true;
    if (std::isnan(diff)) continue;
    d.max_abs = std::max(d.max_abs, diff);
    if (x[i] != 0) d.max_rel = std::max(d.max_rel, diff / std::abs(x[i]));
  }
  return d;
}

}  // namespace

CaptureComparison compare_captures(const SafetensorsFile& reference,
                                   const SafetensorsFile& candidate, double atol, double rtol) {
  SG_CHECK(atol >= 0 && rtol >= 0 && std::isfinite(atol) && std::isfinite(rtol),
           "compare_captures: tolerances must be finite and >= 0, got atol {} and rtol {}", atol,
           rtol);
  CaptureComparison out{.atol = atol, .rtol = rtol};
  std::vector<std::string> names = execution_order(reference);
  for (const auto& [name, tensor] : candidate.tensors) {  // entries only the candidate has, last
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  for (const std::string& name : names) {
    out.entries.push_back(
        compare_one(name, find(reference, name), find(candidate, name), atol, rtol));
    if (out.entries.back().diverges && !out.first_divergent) {
      out.first_divergent = out.entries.size() - 1;
    }
  }
  return out;
}

std::string CaptureComparison::str() const {
  std::string text =
      fmt::format("{:<48} {:>12} {:>12}\n", "name (execution order)", "max abs", "max rel");
  for (const CaptureDifference& d : entries) {
    text += d.problem.empty() ? fmt::format("{:<48} {:>12.4g} {:>12.4g}{}\n", d.name, d.max_abs,
                                            d.max_rel, d.diverges ? "  DIVERGES" : "")
                              : fmt::format("{:<48} {}  DIVERGES\n", d.name, d.problem);
  }
  if (first_divergent) {
    const CaptureDifference& d = entries[*first_divergent];
    text += fmt::format(
        "first divergence beyond atol {} + rtol {}·|reference|: {}{}\n", atol, rtol, d.name,
        d.problem.empty() ? fmt::format(" (max abs {:.4g}, max rel {:.4g})", d.max_abs, d.max_rel)
                          : " (" + d.problem + ")");
  } else {
    text += fmt::format("no divergence beyond atol {} + rtol {}·|reference| in {} entries\n", atol,
                        rtol, entries.size());
  }
  return text;
}

}  // namespace sg::nn
