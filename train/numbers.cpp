#include "train/numbers.h"

#include <cmath>

#include "autograd/error.h"
#include "nn/parse_number.h"

namespace sg::train {

namespace {

template <typename T>
constexpr std::string_view kind_of() {
  if constexpr (std::is_same_v<T, double>) return "a number";
  if constexpr (std::is_same_v<T, uint64_t>) return "a non-negative integer";
  return "an integer";
}

}  // namespace

template <typename T>
T parse_number(std::string_view text, std::string_view what, std::string_view kind) {
  if (kind.empty()) kind = kind_of<T>();
  T value{};
  const nn::NumberText read = nn::read_number(text, value);
  SG_CHECK(read != nn::NumberText::kOutOfRange, "{} = '{}' is not {}: out of range", what,
           excerpt(text), kind);
  SG_CHECK(read == nn::NumberText::kNumber, "{} = '{}' is not {}", what, excerpt(text), kind);
  return value;
}

bool parse_bool(std::string_view text, std::string_view what) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  SG_FAIL("{} = '{}' is not true or false", what, excerpt(text));
}

template <typename T>
void check_range(std::string_view flag, T value, T lo, T hi) {
  if constexpr (std::is_same_v<T, double>) {  // a real's range is an interval with both ends
    check_range(flag, value, RealInterval{.lo = lo, .hi = hi});
  } else {
    SG_CHECK(value >= lo && value <= hi, "{} must be in [{}, {}], got {}", flag, lo, hi, value);
  }
}

template <typename T>
std::function<std::string(std::string&)> number_in(T lo, T hi) {
  return [lo, hi](std::string& text) -> std::string {
    try {
      check_range("the value", parse_number<T>(text, "the value"), lo, hi);
      return "";
    } catch (const sg::Error&) {
      return fmt::format("'{}' is not {} in [{}, {}]", excerpt(text), kind_of<T>(), lo, hi);
    }
  };
}

bool RealInterval::contains(double value) const {
  return (lo_open ? value > lo : value >= lo) && (hi_open ? value < hi : value <= hi);
}

std::string RealInterval::text() const {
  return fmt::format("{}{}, {}{}", lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
}

void check_range(std::string_view flag, double value, const RealInterval& range) {
  SG_CHECK(range.contains(value), "{} must be in {}, got {}", flag, range.text(), value);
}

std::function<std::string(std::string&)> number_in(const RealInterval& range) {
  return [range](std::string& text) -> std::string {
    try {
      check_range("the value", parse_number<double>(text, "the value"), range);
      return "";
    } catch (const sg::Error&) {
      return fmt::format("'{}' is not a number in {}", excerpt(text), range.text());
    }
  };
}

template int64_t parse_number<int64_t>(std::string_view, std::string_view, std::string_view);
template uint64_t parse_number<uint64_t>(std::string_view, std::string_view, std::string_view);
template double parse_number<double>(std::string_view, std::string_view, std::string_view);
template void check_range<int64_t>(std::string_view, int64_t, int64_t, int64_t);
template void check_range<uint64_t>(std::string_view, uint64_t, uint64_t, uint64_t);
template void check_range<double>(std::string_view, double, double, double);
template std::function<std::string(std::string&)> number_in<int64_t>(int64_t, int64_t);
template std::function<std::string(std::string&)> number_in<uint64_t>(uint64_t, uint64_t);
template std::function<std::string(std::string&)> number_in<double>(double, double);

}  // namespace sg::train
