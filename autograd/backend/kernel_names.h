// The kernel enums every backend implements, with their names for errors and profiles.
// Adding an op: add it to the enum AND the name table; the static_assert catches a forgotten name.
#pragma once

#include <array>
#include <string_view>

namespace sg {

// y = f(x), elementwise. alpha/beta carry the parameters of Pow (alpha = exponent) and Clamp
// (alpha = min, beta = max; ±inf when absent). *Grad ops are derivatives used by backward.
enum class UnaryOp {
  Neg,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Abs,
  Sign,
  Tanh,
  Sigmoid,
  Relu,
  Gelu,
  GeluTanh,
  GeluGrad,
  GeluTanhGrad,
  Pow,
  Clamp,
  Square,
  LogicalNot,
  Count
};
inline constexpr std::array<std::string_view, static_cast<size_t>(UnaryOp::Count)> kUnaryOpNames = {
    "neg",  "exp",     "log",    "sqrt",       "rsqrt",     "abs",       "sign",
    "tanh", "sigmoid", "relu",   "gelu",       "gelu_tanh", "gelu_grad", "gelu_tanh_grad",
    "pow",  "clamp",   "square", "logical_not"};
static_assert(kUnaryOpNames.size() == static_cast<size_t>(UnaryOp::Count));

// y = f(a, b), elementwise. Comparisons and logic write bool. ReluGrad is relu's backward in one
// pass, PyTorch's threshold_backward: 0 where b (relu's output) is <= 0, else a (the gradient), so
// a NaN output passes its gradient on.
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Maximum,
  Minimum,
  ReluGrad,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  LogicalAnd,
  LogicalOr,
  Count
};
inline constexpr std::array<std::string_view, static_cast<size_t>(BinaryOp::Count)> kBinaryOpNames =
    {"add", "sub", "mul", "div", "pow", "maximum", "minimum",     "relu_grad",
     "eq",  "ne",  "lt",  "le",  "gt",  "ge",      "logical_and", "logical_or"};
static_assert(kBinaryOpNames.size() == static_cast<size_t>(BinaryOp::Count));

constexpr bool is_comparison(BinaryOp op) { return op >= BinaryOp::Eq; }

enum class ReduceOp { Sum, Max, Min, Count };
inline constexpr std::array<std::string_view, static_cast<size_t>(ReduceOp::Count)> kReduceOpNames =
    {"sum", "max", "min"};
static_assert(kReduceOpNames.size() == static_cast<size_t>(ReduceOp::Count));

inline std::string_view op_name(UnaryOp op) { return kUnaryOpNames[static_cast<size_t>(op)]; }
inline std::string_view op_name(BinaryOp op) { return kBinaryOpNames[static_cast<size_t>(op)]; }
inline std::string_view op_name(ReduceOp op) { return kReduceOpNames[static_cast<size_t>(op)]; }

}  // namespace sg
