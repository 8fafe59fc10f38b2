#include "autograd/generator.h"

#include <cmath>
#include <numbers>

namespace sg {

void Generator::manual_seed(uint64_t seed) { state_ = seed; }

uint64_t Generator::next_u64() {
  // splitmix64: one add and a bit mix per number; passes BigCrush, state is one word.
  return splitmix64_mix(state_ += kSplitmixGamma);
}

uint64_t Generator::take(uint64_t n) {
  const uint64_t start = state_;
  state_ += n * kSplitmixGamma;  // wraps modulo 2^64, as n calls of next_u64() do
  return start;
}

double Generator::next_uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Generator::next_normal() {
  // Box-Muller; 1 - u keeps the log argument in (0, 1].
  double u1 = 1.0 - next_uniform();
  double u2 = next_uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace sg
