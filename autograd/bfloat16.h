// bfloat16: a float32 cut to its upper 16 bits. The sign and all 8 exponent bits are kept, so it
// spans float32's range (about 1e-38 to 3e38); 7 of the 23 mantissa bits are kept, so it carries
// 2 to 3 significant decimal digits (a relative step of 2^-8 = 0.4%).
//
//   float32   s eeeeeeee mmmmmmm mmmmmmmmmmmmmmmm
//   bfloat16  s eeeeeeee mmmmmmm                    (the upper half; the lower is rounded away)
//
//   sg::BFloat16 h(3.14159f);          // rounded to nearest, ties to even: 3.140625
//   float f = static_cast<float>(h);   // exact: the bits come back as a float's upper half
//
// sg::kBFloat16 tensors store these; docs/13b-mixed-precision.md is the chapter.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace sg {

// float32 -> bfloat16 bits, rounded to nearest with ties to even (bfloat16.cpp). A NaN stays a
// NaN (0x7FC0, as PyTorch); ±inf stays ±inf; a float above the largest bfloat16 rounds to inf.
uint16_t float_to_bfloat16_bits(float value);

// bfloat16 bits -> float32, exactly: the 16 bits become the upper half of the float.
constexpr float bfloat16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// The element type of sg::kBFloat16 tensors: 16 bits, converted explicitly to and from the other
// element types (through float, as PyTorch's c10::BFloat16: a double is first rounded to float).
// It has no arithmetic: bfloat16 tensors store values, and products under sg::AutocastGuard read
// them (docs/13b-mixed-precision.md, "Which ops stay float32").
struct BFloat16 {
  uint16_t bits;

  BFloat16() = default;
  template <typename T>
  requires std::is_arithmetic_v<T>
  explicit BFloat16(T value) {
    if constexpr (std::is_same_v<T, bool>) {
      bits = value ? 0x3F80 : 0;  // 1.0 and 0.0
    } else {
      bits = float_to_bfloat16_bits(static_cast<float>(value));
    }
  }
  template <typename T>
  requires std::is_arithmetic_v<T>
  explicit operator T() const {
    if constexpr (std::is_same_v<T, bool>) {
      return (bits & 0x7FFF) != 0;  // ±0 is false; NaN, like a float NaN, is true
    } else {
      return static_cast<T>(bfloat16_bits_to_float(bits));
    }
  }
  static constexpr BFloat16 from_bits(uint16_t bits) {
    BFloat16 out;
    out.bits = bits;
    return out;
  }
};

// float32 values rounded to bfloat16 and kept as float32 (the lower 16 bits zero): what a product
// under autocast reads, for the reference kernels (backend/cpu/gemm.cpp).
void round_to_bfloat16(const float* src, float* dst, int64_t n);

}  // namespace sg
