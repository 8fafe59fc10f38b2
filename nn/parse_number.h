// Strict text-to-number conversion for configurations, command lines and file metadata: the whole
// text must be one number of the type (no blanks, no trailing characters, in range). The same on
// every platform and in every locale: integers by std::from_chars, floating point through a
// stream in the classic "C" locale (libc++ before 17 has no floating-point std::from_chars, and
// std::strtod reads the decimal point of the program's locale). sg::train::parse_number (the
// training toolkit's, with error messages) is built on it.
#pragma once

#include <charconv>
#include <limits>
#include <locale>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace sg::nn {

// Whether `text` is written as a decimal number: an optional sign, digits with at most one
// decimal point (at least one digit), then optionally an exponent (e or E, an optional sign,
// digits). The streams differ on the rest: libc++'s reads "0x10", "nan" and "inf" too.
inline bool is_decimal_number(std::string_view text) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i - start;
  };
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == text.size();
}

enum class NumberText { kNumber, kNotANumber, kOutOfRange };

// Reads `text` into `value` when it is a number of type T; says why not otherwise.
template <typename T>
NumberText read_number(std::string_view text, T& value) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
  if (text.empty()) return NumberText::kNotANumber;
  if constexpr (std::is_integral_v<T>) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range) return NumberText::kOutOfRange;
    if (ec != std::errc() || end != text.data() + text.size()) return NumberText::kNotANumber;
  } else {
    if (!is_decimal_number(text)) return NumberText::kNotANumber;
    std::istringstream in{std::string(text)};
    in.imbue(std::locale::classic());
    T read{};
    in >> std::noskipws >> read;
    const bool whole = in.eof() || in.peek() == std::char_traits<char>::eof();
    // Out of range, the stream stores the largest finite value (of the sign) and fails.
    if (in.fail() && whole &&
        (read == std::numeric_limits<T>::max() || read == std::numeric_limits<T>::lowest())) {
      return NumberText::kOutOfRange;
    }
    if (in.fail() || !whole) return NumberText::kNotANumber;
    value = read;
  }
  return NumberText::kNumber;
}

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  if (read_number(text, value) != NumberText::kNumber) return std::nullopt;
  return value;
}

}  // namespace sg::nn
