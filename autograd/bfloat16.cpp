// float32 -> bfloat16 rounding, the one conversion every bfloat16 value on the CPU goes through
// (bfloat16.h). docs/13b-mixed-precision.md walks through an example.
#include "autograd/bfloat16.h"

#include <cmath>

#include "autograd/error.h"  // sg::Error, which exercise mode's stub throws

namespace sg {

uint16_t float_to_bfloat16_bits(float value) {
  // --8<-- [start:ex13b.float_to_bfloat16]
  // Keep the upper 16 bits, rounded by the lower 16: adding 0x7FFF carries into the upper half
  // exactly when the lower half is above one half (0x8000); adding 0x8000 instead (the kept
  // half odd) also carries at exactly one half, so a tie rounds to the even neighbour.
  // A carry out of the mantissa steps the exponent (1.99.. rounds to 2), and past the largest
  // finite value into the exponent of inf, with a zero mantissa: inf, which RNE requires.
  if (std::isnan(value)) return 0x7FC0;  // a quiet NaN (the carry could turn a NaN into inf)
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t lowest_kept_bit = (bits >> 16) & 1;
  return static_cast<uint16_t>((bits + 0x7FFF + lowest_kept_bit) >> 16);
  // --8<-- [end:ex13b.float_to_bfloat16]
}

void round_to_bfloat16(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16_bits_to_float(float_to_bfloat16_bits(src[i]));
}

}  // namespace sg
