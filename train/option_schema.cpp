#include "train/option_schema.h"

#include <algorithm>
#include <type_traits>

#include <fmt/format.h>

#include "autograd/error.h"
#include "train/numbers.h"

namespace sg::train {

std::string Option::flag() const {
  if (!flag_name.empty()) return flag_name;
  std::string name = key;
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

OptionSchema& OptionSchema::integer(std::string key, int64_t& value, int64_t lo, int64_t hi,
                                    OnResume rule, std::string help) {
  options_.push_back({std::move(key), &value, lo, hi, {}, rule, std::move(help)});
  return *this;
}

OptionSchema& OptionSchema::unsigned_integer(std::string key, uint64_t& value, OnResume rule,
                                             std::string help) {
  options_.push_back({std::move(key), &value, 0, 0, {}, rule, std::move(help)});
  return *this;
}

OptionSchema& OptionSchema::real(std::string key, double& value, double lo, double hi,
                                 OnResume rule, std::string help) {
  options_.push_back({std::move(key), &value, 0, 0, {lo, hi}, rule, std::move(help)});
  return *this;
}

OptionSchema& OptionSchema::boolean(std::string key, bool& value, OnResume rule, std::string help) {
  options_.push_back({std::move(key), &value, 0, 0, {}, rule, std::move(help)});
  return *this;
}

OptionSchema& OptionSchema::text(std::string key, std::string& value, OnResume rule,
                                 std::string help) {
  options_.push_back({std::move(key), &value, 0, 0, {}, rule, std::move(help)});
  return *this;
}

Option& OptionSchema::last(const char* modifier) {
  SG_CHECK(!options_.empty(), "OptionSchema::{}: no option to modify yet", modifier);
  return options_.back();
}

OptionSchema& OptionSchema::flag(std::string name) {
  last("flag").flag_name = std::move(name);
  return *this;
}

namespace {

// The option a bound modifier applies to, which must be a real.
Option& real_option(Option& o, const char* modifier) {
  SG_CHECK(std::holds_alternative<double*>(o.value), "OptionSchema::{}: '{}' is not a real option",
           modifier, o.key);
  return o;
}

}  // namespace

OptionSchema& OptionSchema::excluding_lo() {
  real_option(last("excluding_lo"), "excluding_lo").real_range.lo_open = true;
  return *this;
}

OptionSchema& OptionSchema::excluding_hi() {
  real_option(last("excluding_hi"), "excluding_hi").real_range.hi_open = true;
  return *this;
}

OptionSchema& OptionSchema::one_of(std::vector<std::string> choices) {
  Option& o = last("one_of");
  SG_CHECK(std::holds_alternative<std::string*>(o.value),
           "OptionSchema::one_of: '{}' is not a text option", o.key);
  o.choices = std::move(choices);
  return *this;
}

OptionSchema& OptionSchema::before_it_existed(std::string value) {
  last("before_it_existed").before_it_existed = std::move(value);
  return *this;
}

OptionSchema& OptionSchema::no_flag(std::string shown_as) {
  Option& o = last("no_flag");
  o.flag_name = std::move(shown_as);
  o.command_line = false;
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

std::vector<std::pair<std::string, std::string>> OptionSchema::flag_values() const {
  const ConfigMap values = to_map();
  std::vector<std::pair<std::string, std::string>> out;
  for (const Option& o : options_) out.emplace_back(o.flag(), values.at(o.key));
  return out;
}

namespace {

void check_choice(const Option& o, const std::string& value, const std::string& what) {
  SG_CHECK(
      o.choices.empty() || std::find(o.choices.begin(), o.choices.end(), value) != o.choices.end(),
      "{} must be one of {}, got '{}'", what, fmt::join(o.choices, ", "), value);
}

}  // namespace

void OptionSchema::check() const {
  for (const Option& o : options_) {
    if (auto* i = std::get_if<int64_t*>(&o.value)) {
      check_range<int64_t>(o.flag(), **i, o.integer_lo, o.integer_hi);
    } else if (auto* r = std::get_if<double*>(&o.value)) {
      check_range(o.flag(), **r, o.real_range);
    } else if (auto* t = std::get_if<std::string*>(&o.value)) {
      check_choice(o, **t, o.flag());
    }
  }
}

void OptionSchema::read(const ConfigMap& saved, const std::string& source) const {
  for (const Option& o : options_) {
    const auto it = saved.find(o.key);
    SG_CHECK(it != saved.end() || o.before_it_existed, "{}: the checkpoint's config has no '{}'",
             source, o.key);
    const std::string& text = it != saved.end() ? it->second : *o.before_it_existed;
    const std::string what = fmt::format("{}: checkpoint config '{}'", source, o.key);
    if (auto* i = std::get_if<int64_t*>(&o.value)) {
      **i = parse_number<int64_t>(text, what);
      SG_CHECK(**i >= o.integer_lo && **i <= o.integer_hi, "{} is {}, not in [{}, {}]", what, **i,
               o.integer_lo, o.integer_hi);
    } else if (auto* u = std::get_if<uint64_t*>(&o.value)) {
      **u = parse_number<uint64_t>(text, what, "an integer in [0, 2^64)");
    } else if (auto* r = std::get_if<double*>(&o.value)) {
      **r = parse_number<double>(text, what);
      SG_CHECK(o.real_range.contains(**r), "{} is {}, not in {}", what, **r, o.real_range.text());
    } else if (auto* b = std::get_if<bool*>(&o.value)) {
      **b = parse_bool(text, what);
    } else {
      check_choice(o, text, what);
      *std::get<std::string*>(o.value) = text;
    }
  }
}

void OptionSchema::check_resume(const ConfigMap& saved, const std::string& path) const {
  sg::train::check_resume(saved, to_map(), fields(), path);
}

}  // namespace sg::train
