// Element types. Bool is a real dtype (1 byte) so masks read as in PyTorch: true = keep / attend.
//   sg::kFloat32 (default), sg::kFloat64 (gradchecks), sg::kInt64 (token ids, indices), sg::kBool,
//   sg::kBFloat16 (16-bit floats: storage, conversions and checkpoints; the products of mixed
//   precision read float32 tensors as bfloat16 under sg::AutocastGuard, autograd/autocast.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "autograd/bfloat16.h"
#include "autograd/error.h"

namespace sg {

// In promotion order (promote_types): bool < int64 < bfloat16 < float32 < float64.
enum class DType : uint8_t { Bool, Int64, BFloat16, Float32, Float64 };

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;

constexpr std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::Bool:
      return "bool";
    case DType::Int64:
      return "int64";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
  }
  return "?";
}

// "a float32", "an int64": the name as a message reads it (int64 is the one starting with a
// vowel).
inline std::string dtype_with_article(DType d) {
  return (d == DType::Int64 ? "an " : "a ") + std::string(dtype_name(d));
}

constexpr size_t dtype_size(DType d) {
  switch (d) {
    case DType::Bool:
      return 1;
    case DType::Int64:
      return 8;
    case DType::BFloat16:
      return 2;
    case DType::Float32:
      return 4;
    case DType::Float64:
      return 8;
  }
  return 0;
}

// Floating point, as torch.is_floating_point: bfloat16 too.
constexpr bool is_floating(DType d) {
  return d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

// Whether `value` is a whole number an int64_t holds exactly: false for a fraction, an infinity, a
// NaN and anything of magnitude 2^63 or more, whose conversion to int64_t would be undefined.
inline bool holds_int64(double value) {
  return value >= -0x1p63 && value < 0x1p63 && std::floor(value) == value;
}

// Type promotion, as PyTorch for tensor-tensor operands: bool < int64 < bfloat16 < float32 <
// float64 (bfloat16 + float32 is float32).
constexpr DType promote_types(DType a, DType b) { return a > b ? a : b; }

// The C++ type of each dtype, and back.
template <typename T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of<BFloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::Float64;
};

// Note [bfloat16 is for storage]: bfloat16 tensors hold values (conversions, copies, views,
// indexing, checkpoints); arithmetic on them is refused, naming the op. Mixed precision keeps
// float32 tensors and rounds the operands of the products under sg::AutocastGuard (autocast.h),
// so no kernel of arithmetic needs a bfloat16 version.
[[noreturn]] inline void refuse_bfloat16(std::string_view op) {
  SG_FAIL(
      "{}: not supported for bfloat16 tensors, which scratchgrad uses for storage; convert with "
      ".to(sg::kFloat32), or keep float32 tensors and run the products under "
      "sg::AutocastGuard(sg::kBFloat16)",
      op);
}

// Calls fn.template operator()<T>() with T the C++ type of `d`; the dispatch helper of the
// project's kernels (see docs/conventions.md). `op` names the caller for the error message.
// bfloat16 is refused (Note [bfloat16 is for storage]).
template <typename Fn>
decltype(auto) dispatch_dtype(std::string_view op, DType d, Fn&& fn) {
  switch (d) {
    case DType::Bool:
      return fn.template operator()<bool>();
    case DType::Int64:
      return fn.template operator()<int64_t>();
    case DType::Float32:
      return fn.template operator()<float>();
    case DType::Float64:
      return fn.template operator()<double>();
    case DType::BFloat16:
      refuse_bfloat16(op);
  }
  SG_FAIL("{}: unknown dtype", op);
}

// The same with bfloat16 (T = sg::BFloat16), for the kernels that only move or convert values:
// fill, copy, where, index_select, gather, and data in and out.
template <typename Fn>
decltype(auto) dispatch_dtype_and_bfloat16(std::string_view op, DType d, Fn&& fn) {
  if (d == DType::BFloat16) return fn.template operator()<BFloat16>();
  return dispatch_dtype(op, d, std::forward<Fn>(fn));
}

// The same, for kernels that only make sense on floating-point data (float32 or float64).
template <typename Fn>
decltype(auto) dispatch_floating(std::string_view op, DType d, Fn&& fn) {
  switch (d) {
    case DType::Float32:
      return fn.template operator()<float>();
    case DType::Float64:
      return fn.template operator()<double>();
    case DType::BFloat16:
      refuse_bfloat16(op);
    default:
      SG_FAIL("{}: expected a float32 or float64 tensor, got {}", op, dtype_name(d));
  }
}

inline std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }

}  // namespace sg

template <>
struct fmt::formatter<sg::DType> : fmt::formatter<std::string_view> {
  auto format(sg::DType d, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(sg::dtype_name(d), ctx);
  }
};
