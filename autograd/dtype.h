// Element types. Bool is a real dtype (1 byte) so masks read as in PyTorch: true = keep / attend.
//   sg::kFloat32 (default), sg::kFloat64 (gradchecks), sg::kInt64 (token ids, indices), sg::kBool.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>

#include "autograd/error.h"

namespace sg {

enum class DType : uint8_t { Bool, Int64, Float32, Float64 };

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;

constexpr std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::Bool:
      return "bool";
    case DType::Int64:
      return "int64";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
  }
  return "?";
}

constexpr size_t dtype_size(DType d) {
  switch (d) {
    case DType::Bool:
      return 1;
    case DType::Int64:
      return 8;
    case DType::Float32:
      return 4;
    case DType::Float64:
      return 8;
  }
  return 0;
}

constexpr bool is_floating(DType d) { return d == DType::Float32 || d == DType::Float64; }

// Type promotion, as PyTorch for tensor-tensor operands: bool < int64 < float32 < float64.
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
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::Float64;
};

// Calls fn.template operator()<T>() with T the C++ type of `d`; the one dispatch helper of the
// project (see docs/conventions.md). `op` names the caller for the error message.
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
  }
  SG_FAIL("{}: unknown dtype", op);
}

// The same, for kernels that only make sense on floating-point data.
template <typename Fn>
decltype(auto) dispatch_floating(std::string_view op, DType d, Fn&& fn) {
  switch (d) {
    case DType::Float32:
      return fn.template operator()<float>();
    case DType::Float64:
      return fn.template operator()<double>();
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
