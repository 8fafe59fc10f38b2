// exp for float32 that the compiler can vectorise: no libm call, no branch, so a loop over it
// becomes 8-wide AVX2 code. std::exp / expf are calls into libm, one element at a time; softmax
// spends most of its time there. (glibc's vector expf is only used under -ffast-math.)
//
// The classic Cephes method: exp(x) = 2^n · exp(r), n = round(x / ln 2), r = x - n ln 2 in
// [-ln2/2, ln2/2], exp(r) by a degree-6 polynomial; 2^n is built from its exponent bits.
// Relative error below 2e-7 (about 1.5 units in the last place); float64 keeps std::exp.
#pragma once

#include <cstdint>
#include <cstring>

namespace sg::cpu {

inline float fast_exp(float x) {
  // Beyond these exp overflows to inf / underflows to 0 (denormal results are flushed to 0). A NaN
  // is clamped too (to kLo), so that n below is a number: converting a NaN to int32 is undefined.
  constexpr float kHi = 88.3762626647949f, kLo = -87.3365447504f;
  const float clamped = x > kHi ? kHi : (x >= kLo ? x : kLo);
  const float n = __builtin_floorf(clamped * 1.44269504088896341f + 0.5f);
  // r = x - n ln 2, with ln 2 split in two so the product is exact.
  float r = clamped - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  float y = e * scale;
  y = x > kHi ? __builtin_inff() : y;  // +inf stays inf
  y = x < kLo ? 0.0f : y;              // -inf (a masked score) gives exactly 0
  return x != x ? x : y;               // NaN stays NaN
}

// The larger of m and v, and NaN if either is: a running max that has met a NaN keeps it.
// (`m > v ? m : v` drops a NaN m at the next element, and so does std::max.)
template <typename T>
inline T max_keeping_nan(T m, T v) {
  return v > m || v != v ? v : m;
}

// The max of value(0), ..., value(n - 1), NaN if any is NaN, -inf when n is 0: 16 running maxima
// side by side (one vector register of floats), combined at the end. Not an `omp simd
// reduction(max)`: that starts each lane from the type's lowest value, which is -inf with GCC
// but the lowest finite value with Clang, so a row of -inf (a fully masked row) would have a
// finite max there.
template <typename T, typename Value>
inline T running_max(int64_t n, Value value) {
  constexpr int64_t kLanes = 16;
  constexpr T kNegInf = -__builtin_inf();
  T lanes[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) lanes[l] = kNegInf;
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] = max_keeping_nan(lanes[l], value(d + l));
  }
  T m = kNegInf;
  for (; d < n; ++d) m = max_keeping_nan(m, value(d));
  for (int64_t l = 0; l < kLanes; ++l) m = max_keeping_nan(m, lanes[l]);
  return m;
}

}  // namespace sg::cpu
