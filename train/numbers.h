// The one strict number parser of the training toolkit: a number is the whole text, in range, or
// an sg::Error naming what it was for (a flag, a metadata key) and the text. No "12abc" read as
// 12, no "True" read as false, no 99999999999999999999 saturated into 2^63 - 1.
//
//   int64_t steps = sg::train::parse_number<int64_t>("1000", "--steps");
//   bool pre_ln = sg::train::parse_bool(metadata.at("config.norm_first"), "'norm_first'");
//   // "--layers must be in [1, 64], got 65":
//   sg::train::check_range("--layers", layers, 1, 64);
//   // "--dropout must be in [0, 1), got 1":
//   sg::train::check_range("--dropout", dropout, {.lo = 0, .hi = 1, .hi_open = true});
//   app.add_option("--steps", steps)->check(CLI::Validator(number_in<int64_t>(0, 1e9), "INT"));
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace sg::train {

// T is int64_t, uint64_t or double. `what` starts the message ("checkpoint config 'layers'");
// `kind` says what was expected ("an integer"; empty: the type's own word).
template <typename T>
T parse_number(std::string_view text, std::string_view what, std::string_view kind = {});

// "true" or "false" (and "1" or "0", which older checkpoints wrote); anything else is an error.
bool parse_bool(std::string_view text, std::string_view what);

// `value` in [lo, hi], or "<flag> must be in [lo, hi], got value".
template <typename T>
void check_range(std::string_view flag, T value, T lo, T hi);

// A range of reals whose ends may be left out: [0, 1) for a probability that must leave something
// (dropout, label smoothing), (0, 1e30] for a learning rate.
struct RealInterval {
  double lo = 0, hi = 0;
  bool lo_open = false, hi_open = false;
  bool contains(double value) const;  // false for a NaN
  std::string text() const;           // "[0, 1)"
};
// `value` in `range`, or "<flag> must be in [0, 1), got 1".
void check_range(std::string_view flag, double value, const RealInterval& range);

// A check for a command-line parser (CLI11's Validator takes it): returns "" when the text is a
// T in [lo, hi], else the reason. It sees the text before the parser converts it, so a number too
// large for T is refused instead of saturated.
template <typename T>
std::function<std::string(std::string&)> number_in(T lo, T hi);
std::function<std::string(std::string&)> number_in(const RealInterval& range);

}  // namespace sg::train
