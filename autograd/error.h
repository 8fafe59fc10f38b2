// Errors: every failure is an sg::Error whose message starts with the operation and names the
// shapes, dtypes or values involved, e.g.
//   matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>

namespace sg {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
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
