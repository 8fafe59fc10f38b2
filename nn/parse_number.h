// Strict text-to-number conversion for configurations, command lines and file metadata: the whole
// text must be one number of the type (no blanks, no trailing characters, in range), else
// nothing. The same on every platform and in every locale: integers by std::from_chars, floating
// point through a stream in the classic "C" locale (libc++ before 17 has no floating-point
// std::from_chars, and std::strtod reads the decimal point of the program's locale).
#pragma once

#include <charconv>
#include <locale>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace sg::nn {

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
  if (text.empty()) return std::nullopt;
  T value{};
  if constexpr (std::is_integral_v<T>) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  } else {
    std::istringstream in{std::string(text)};
    in.imbue(std::locale::classic());
    in >> std::noskipws >> value;
    if (in.fail() || in.peek() != std::char_traits<char>::eof()) return std::nullopt;
  }
  return value;
}

}  // namespace sg::nn
