// Errors: every failure is an sg::Error whose message starts with the operation and names the
// shapes, dtypes or values involved, and, for an op called from user code, where that call is:
//   matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4) (at train.cpp:42)
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>

namespace sg {

namespace detail {
// The message with " (at file:line)" of the user's call that is running, if any (call_site.h).
std::string with_call_site(std::string message);
}  // namespace detail

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
