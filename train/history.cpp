#include "train/history.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

#include "autograd/error.h"

namespace sg::train {

using Json = nlohmann::json;

namespace {

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json numbers(const std::vector<double>& values) {
  Json list = Json::array();
  for (double v : values) list.push_back(number(v));
  return list;
}

double number_from(const Json& v, const std::string& key, const std::string& source) {
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  SG_CHECK(v.is_number(), "{}: history '{}' holds {}, not a number", source, key, v.type_name());
  return v.get<double>();
}

}  // namespace

void History::add_evaluation(int64_t step, const std::map<std::string, double>& metrics) {
  if (!eval_steps.empty()) {
    SG_CHECK(metrics.size() == evals.size(),
             "History::add_evaluation: {} metrics at step {}, but {} before", metrics.size(), step,
             evals.size());
  }
  for (const auto& [name, _] : metrics) {
    SG_CHECK(name != "losses" && name != "eval_steps" && name != "steps" && !totals.contains(name),
             "History::add_evaluation: '{}' is a reserved name", name);
    SG_CHECK(eval_steps.empty() || evals.contains(name),
             "History::add_evaluation: metric '{}' at step {} is new (the evaluations before had "
             "other metrics)",
             name, step);
  }
  eval_steps.push_back(static_cast<double>(step));
  for (const auto& [name, value] : metrics) evals[name].push_back(value);
}

const std::vector<double>& History::eval(const std::string& metric) const {
  static const std::vector<double> none;
  if (eval_steps.empty()) return none;  // before the first evaluation, every metric is empty
  auto it = evals.find(metric);
  SG_CHECK(it != evals.end(), "History: no metric '{}'", metric);
  return it->second;
}

std::vector<double> History::loss_steps() const {
  std::vector<double> steps(losses.size());
  for (size_t i = 0; i < steps.size(); ++i) steps[i] = static_cast<double>(i + 1);
  return steps;
}

std::string History::to_json() const {
  Json j = Json::object();
  j["losses"] = numbers(losses);
  j["eval_steps"] = numbers(eval_steps);
  for (const auto& [name, values] : evals) j[name] = numbers(values);
  for (const auto& [name, value] : totals) j[name] = number(value);
  return j.dump();
}

History History::from_json(const std::string& text, const std::string& source) {
  Json j;
  try {
    // Flat: an object of number lists. Anything nested deeper is refused while parsing, before it
    // could be printed or freed recursively.
    auto flat = [](int depth, Json::parse_event_t, Json&) {
      if (depth > 2) throw std::runtime_error("nested too deep");
      return true;
    };
    j = Json::parse(text, flat);
  } catch (const std::exception& e) {
    SG_FAIL("{}: checkpoint metadata 'history' is not valid: {}", source, e.what());
  }
  SG_CHECK(j.is_object(), "{}: checkpoint metadata 'history' is not a JSON object", source);
  SG_CHECK(j.contains("losses") && j.contains("eval_steps"),
           "{}: checkpoint metadata 'history' has no 'losses' or 'eval_steps'", source);
  History h;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_array()) {
      h.totals[key] = number_from(value, key, source);
      continue;
    }
    std::vector<double> list;
    for (const Json& v : value) list.push_back(number_from(v, key, source));
    if (key == "losses") {
      h.losses = std::move(list);
    } else if (key == "eval_steps") {
      h.eval_steps = std::move(list);
    } else if (key != "steps") {
      h.evals[key] = std::move(list);
    }
  }
  for (const auto& [name, values] : h.evals) {
    SG_CHECK(values.size() == h.eval_steps.size(),
             "{}: checkpoint metadata 'history' holds {} values of '{}' for {} evaluations", source,
             values.size(), name, h.eval_steps.size());
  }
  return h;
}

}  // namespace sg::train
