#include "nn/train/option_schema.h"

#include <algorithm>

#include <fmt/format.h>

#include "autograd/error.h"
#include "nn/train/numbers.h"

namespace sg::train {

std::string Option::flag() const {
  std::string name = key;
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

OptionSchema& OptionSchema::integer(std::string key, int64_t& value, int64_t lo, int64_t hi,
                                    OnResume rule, std::string help) {
  options_.push_back({std::move(key), &value, lo, hi, 0, 0, rule, std::move(help)});
  return *this;
}

OptionSchema& OptionSchema::real(std::string key, double& value, double lo, double hi,
                                 OnResume rule, std::string help) {
  options_.push_back({std::move(key), &value, 0, 0, lo, hi, rule, std::move(help)});
  return *this;
}

OptionSchema& OptionSchema::boolean(std::string key, bool& value, OnResume rule, std::string help) {
  options_.push_back({std::move(key), &value, 0, 0, 0, 0, rule, std::move(help)});
  return *this;
}

OptionSchema& OptionSchema::text(std::string key, std::string& value, OnResume rule,
                                 std::string help) {
  options_.push_back({std::move(key), &value, 0, 0, 0, 0, rule, std::move(help)});
  return *this;
}

ConfigMap OptionSchema::to_map() const {
  ConfigMap map;
  for (const Option& o : options_) {
    map[o.key] = std::visit(
        [](auto* v) -> std::string {
          if constexpr (std::is_same_v<decltype(v), bool*>)
            return *v ? "true" : "false";
          else if constexpr (std::is_same_v<decltype(v), std::string*>)
            return *v;
          else
            return fmt::format("{}", *v);
        },
        o.value);
  }
  return map;
}

std::vector<ConfigField> OptionSchema::fields() const {
  std::vector<ConfigField> out;
  for (const Option& o : options_) out.push_back({o.key, o.flag(), o.on_resume});
  return out;
}

void OptionSchema::check() const {
  for (const Option& o : options_) {
    if (auto* i = std::get_if<int64_t*>(&o.value)) {
      check_range<int64_t>(o.flag(), **i, o.integer_lo, o.integer_hi);
    } else if (auto* r = std::get_if<double*>(&o.value)) {
      check_range<double>(o.flag(), **r, o.real_lo, o.real_hi);
    }
  }
}

void OptionSchema::read(const ConfigMap& saved, const std::string& source) const {
  for (const Option& o : options_) {
    const auto it = saved.find(o.key);
    SG_CHECK(it != saved.end(), "{}: the checkpoint's config has no '{}'", source, o.key);
    const std::string what = fmt::format("{}: checkpoint config '{}'", source, o.key);
    if (auto* i = std::get_if<int64_t*>(&o.value)) {
      **i = parse_number<int64_t>(it->second, what);
      SG_CHECK(**i >= o.integer_lo && **i <= o.integer_hi, "{} is {}, not in [{}, {}]", what, **i,
               o.integer_lo, o.integer_hi);
    } else if (auto* r = std::get_if<double*>(&o.value)) {
      **r = parse_number<double>(it->second, what);
      SG_CHECK(**r >= o.real_lo && **r <= o.real_hi, "{} is {}, not in [{}, {}]", what, **r,
               o.real_lo, o.real_hi);
    } else if (auto* b = std::get_if<bool*>(&o.value)) {
      **b = parse_bool(it->second, what);
    } else {
      *std::get<std::string*>(o.value) = it->second;
    }
  }
}

void OptionSchema::check_resume(const ConfigMap& saved, const std::string& path) const {
  sg::train::check_resume(saved, to_map(), fields(), path);
}

}  // namespace sg::train
