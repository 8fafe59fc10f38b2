#include "train/saved_run_state.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "autograd/error.h"

namespace sg::train {

std::string metrics_to_json(const Metrics& metrics) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : metrics) {
    j[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
  }
  return j.dump();
}

Metrics metrics_from_json(const MetadataReader& md, const std::string& key) {
  const nlohmann::json j = md.json(key, 1);
  SG_CHECK(j.is_object(), "{}: checkpoint metadata '{}' is not a JSON object", md.source(), key);
  Metrics metrics;
  for (const auto& [name, value] : j.items()) {
    SG_CHECK(value.is_number() || value.is_null(),
             "{}: checkpoint metadata '{}': '{}' is not a number", md.source(), key, name);
    metrics[name] = value.is_null() ? std::nan("") : value.get<double>();
  }
  return metrics;
}

SavedRunState saved_run_state(const nn::Metadata& metadata, const std::string& source) {
  const MetadataReader md(metadata, source);
  SavedRunState s;
  s.step = md.integer("step");
  s.best_step = md.integer("best_step");
  s.best = metrics_from_json(md, "best_metrics");
  s.weights = md.text("weights");
  SG_CHECK(s.weights == "trained" || s.weights == "ema" || s.weights == "average",
           "{}: checkpoint metadata 'weights' is '{}' (expected trained, ema or average)", source,
           s.weights);
  if (s.weights == "average") {
    const nlohmann::json steps = md.json("averaged_steps", 1);
    SG_CHECK(steps.is_array(), "{}: checkpoint metadata 'averaged_steps' is not a list", source);
    for (const nlohmann::json& v : steps) {
      SG_CHECK(v.is_number_integer(), "{}: checkpoint metadata 'averaged_steps' holds {}", source,
               v.dump());
      s.averaged_steps.push_back(v.get<int64_t>());
    }
  }
  return s;
}

void mark_as_average(nn::Metadata& metadata, const std::vector<int64_t>& steps) {
  metadata["weights"] = "average";
  metadata["averaged_steps"] = fmt::format("[{}]", fmt::join(steps, ", "));
}

std::string describe_weights(const nn::Metadata& metadata) {
  const auto get = [&](const std::string& key) {
    const auto it = metadata.find(key);
    return it == metadata.end() ? std::string() : it->second;
  };
  const std::string weights = get("weights"), step = get("step");
  if (weights == "ema")
    return fmt::format("the moving average of the weights (decay {}), step {}", get("config.ema"),
                       step);
  if (weights == "average")
    return fmt::format("the mean of the weights at steps {}", get("averaged_steps"));
  return fmt::format("the trained weights, step {}", step);
}

}  // namespace sg::train
