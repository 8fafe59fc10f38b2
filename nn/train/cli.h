// Command-line checks for programs that parse their flags with CLI11 (header only: include it
// where CLI11 is; the rest of the toolkit does not need it). The check sees a flag's text before
// CLI11 converts it, so a number too large for the type is refused instead of saturated.
//
//   app.add_option("--layers", layers, "encoder and decoder layers")
//       ->check(sg::train::integer_in(1, 64));   // "--layers: '65' is not an integer in [1, 64]"
//   app.add_option("--dropout", dropout)->check(sg::train::real_in(0, 1));
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>

#include <fmt/format.h>

#include "nn/train/numbers.h"

namespace sg::train {

inline CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return CLI::Validator(number_in<int64_t>(lo, hi), fmt::format("INT in [{}, {}]", lo, hi));
}

// The same for a floating-point flag: a decimal number, in range. CLI11's own conversion takes
// "" as 0 and reads hexadecimal floats ("0x1p-3"), "inf" and "nan".
inline CLI::Validator real_in(double lo, double hi) {
  return CLI::Validator(number_in<double>(lo, hi), fmt::format("FLOAT in [{}, {}]", lo, hi));
}

}  // namespace sg::train
