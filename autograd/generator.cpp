#include "autograd/generator.h"

#include <cmath>
#include <numbers>

namespace sg {

void Generator::manual_seed(uint64_t seed) { state_ = seed; }

uint64_t Generator::next_u64() {
  // splitmix64: one add and a bit mix per number; passes BigCrush, state is one word.
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
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
