// Errors: every failure is an sg::Error whose message starts with the operation and names the
// shapes, dtypes or values involved, and, for an op called from user code, where that call is:
//   matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4) (at train.cpp:42)
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace sg {

namespace detail {
// The message with " (at file:line)" of the user's call that is running, if any (call_site.h).
std::string with_call_site(std::string message);
}  // namespace detail

// Untrusted text (a line of an input file, a name read from a checkpoint) as an error message
// quotes it: at most `limit` bytes, a byte below 0x20 or 0x7f, or one that is not part of a
// UTF-8 character, written as \xNN (a NUL would end the message where it stands, a control
// character would drive the terminal, a binary file's bytes garble it), and the length said when
// it is cut: "\x7fELF\x02\x01\x01\x00\x00... (142312 bytes)".
std::string excerpt(std::string_view text, size_t limit = 80);

class Error : public std::runtime_error {
 public:
  // Inside an op called by user code, the message ends with where that call is written.
  explicit Error(const std::string& message)
      : std::runtime_error(detail::with_call_site(message)) {}
};

}  // namespace sg

// SG_CHECK(cond, "op: message {}", args...): throw sg::Error with the formatted message unless
// cond.
#define SG_CHECK(cond, ...)                                     \
  do {                                                          \
    if (!(cond)) throw ::sg::Error(::fmt::format(__VA_ARGS__)); \
  } while (false)

// SG_FAIL("op: message {}", args...): throw unconditionally.
#define SG_FAIL(...) throw ::sg::Error(::fmt::format(__VA_ARGS__))
