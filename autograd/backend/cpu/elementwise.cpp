// CPU elementwise kernels: fill, copy, unary, binary, where, and uniform (random numbers). Each is
// one strided loop (strided_loop.h) around a scalar function; the contiguous case gets a plain loop
// the compiler can vectorise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>

#include "autograd/backend/cpu/copy_rows.h"
#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu/parallel.h"
#include "autograd/backend/cpu/strided_loop.h"
#include "autograd/generator.h"

namespace sg::cpu {

namespace {

// Bools are read and written as bytes: GCC 12 vectorises no loop that loads or stores `bool`
// (it has no vector type for it), while the same loop over uint8_t becomes AVX2 code. A bool's
// byte is 0 or 1, so nothing changes but the speed (where() on a mask: 4x, bench_kernels).
template <typename T>
using Bytes = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

template <typename T>
Bytes<T>* elements(const Tensor& t) {
  return reinterpret_cast<Bytes<T>*>(t.data_ptr<T>());
}

// out = f(x) elementwise; In and Out are the element types.
template <typename Out, typename In, typename F>
void map1(const Tensor& x, const Tensor& out, F f) {
  Bytes<Out>* o = elements<Out>(out);
  const Bytes<In>* p = elements<In>(x);
  auto apply = [&](Bytes<In> v) { return static_cast<Bytes<Out>>(f(static_cast<In>(v))); };
  for_each_run<2>(out.shape(), {&out.strides(), &x.strides()},
                  [&](const Offsets<2>& at, int64_t n, const Offsets<2>& step) {
                    Bytes<Out>* oo = o + at[0];
                    const Bytes<In>* pp = p + at[1];
                    if (step[0] == 1 && step[1] == 1) {
                      for (int64_t i = 0; i < n; ++i) oo[i] = apply(pp[i]);
                    } else {
                      for (int64_t i = 0; i < n; ++i) oo[i * step[0]] = apply(pp[i * step[1]]);
                    }
                  });
}

// out = f(a, b) elementwise, with fast paths for the common broadcast of a scalar.
template <typename Out, typename In, typename F>
void map2(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  Bytes<Out>* o = elements<Out>(out);
  const Bytes<In>* pa = elements<In>(a);
  const Bytes<In>* pb = elements<In>(b);
  auto apply = [&](Bytes<In> x, Bytes<In> y) {
    return static_cast<Bytes<Out>>(f(static_cast<In>(x), static_cast<In>(y)));
  };
  for_each_run<3>(out.shape(), {&out.strides(), &a.strides(), &b.strides()},
                  [&](const Offsets<3>& at, int64_t n, const Offsets<3>& step) {
                    Bytes<Out>* oo = o + at[0];
                    const Bytes<In>* xa = pa + at[1];
                    const Bytes<In>* xb = pb + at[2];
                    if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
                      for (int64_t i = 0; i < n; ++i) oo[i] = apply(xa[i], xb[i]);
                    } else if (step[0] == 1 && step[1] == 1 && step[2] == 0) {
                      const Bytes<In> vb = *xb;
                      for (int64_t i = 0; i < n; ++i) oo[i] = apply(xa[i], vb);
                    } else if (step[0] == 1 && step[1] == 0 && step[2] == 1) {
                      const Bytes<In> va = *xa;
                      for (int64_t i = 0; i < n; ++i) oo[i] = apply(va, xb[i]);
                    } else {
                      for (int64_t i = 0; i < n; ++i) {
                        oo[i * step[0]] = apply(xa[i * step[1]], xb[i * step[2]]);
                      }
                    }
                  });
}

template <typename T>
constexpr bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

template <typename T>
constexpr T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2)));
}
template <typename T>
constexpr T gelu_erf_grad(T x) {
  // d/dx x Φ(x) = Φ(x) + x φ(x)
  T cdf = T(0.5) * (T(1) + std::erf(x * T(std::numbers::sqrt2 / 2)));
  T pdf = std::exp(T(-0.5) * x * x) * T(0.5 * std::numbers::inv_sqrtpi * std::numbers::sqrt2);
  return cdf + x * pdf;
}
template <typename T>
constexpr T gelu_tanh(T x) {
  T u = T(std::numbers::sqrt2 * std::numbers::inv_sqrtpi) * (x + T(0.044715) * x * x * x);
  return T(0.5) * x * (T(1) + std::tanh(u));
}
template <typename T>
constexpr T gelu_tanh_grad(T x) {
  constexpr T k = T(std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2/pi)
  T u = k * (x + T(0.044715) * x * x * x);
  T th = std::tanh(u);
  return T(0.5) * (T(1) + th) +
         T(0.5) * x * (T(1) - th * th) * k * (T(1) + T(3 * 0.044715) * x * x);
}
template <typename T>
constexpr T sigmoid(T x) {
  // Two forms so exp never overflows: for x < 0, e^x / (1 + e^x).
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  T e = std::exp(x);
  return e / (T(1) + e);
}
template <typename T>
constexpr T sign_of(T x) {
  return static_cast<T>((T(0) < x) - (x < T(0)));
}

template <typename T>
void unary_typed(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) {
  if constexpr (std::is_same_v<T, bool>) {
    SG_FAIL("{}: not defined for bool tensors", op_name(op));
  } else {
    // Ops defined on integers too.
    switch (op) {
      case UnaryOp::Neg:
        return map1<T, T>(x, out, [](T v) { return static_cast<T>(-v); });
      case UnaryOp::Abs:
        return map1<T, T>(x, out, [](T v) { return v < T(0) ? T(-v) : v; });
      case UnaryOp::Sign:
        return map1<T, T>(x, out, [](T v) { return sign_of(v); });
      case UnaryOp::Square:
        return map1<T, T>(x, out, [](T v) { return static_cast<T>(v * v); });
      case UnaryOp::Relu:
        return map1<T, T>(x, out, [](T v) { return v <= T(0) ? T(0) : v; });  // NaN stays NaN
      case UnaryOp::Clamp: {
        // NaN passes through, as in PyTorch.
        T lo =
            static_cast<T>(std::max(alpha, static_cast<double>(std::numeric_limits<T>::lowest())));
        T hi = static_cast<T>(std::min(beta, static_cast<double>(std::numeric_limits<T>::max())));
        // min(max(v, lo), hi): when lo > hi everything becomes hi, as in PyTorch.
        return map1<T, T>(x, out, [lo, hi](T v) {
          T r = v < lo ? lo : v;
          return r > hi ? hi : r;
        });
      }
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case UnaryOp::Exp:
          return map1<T, T>(x, out, [](T v) { return std::exp(v); });
        case UnaryOp::Log:
          return map1<T, T>(x, out, [](T v) { return std::log(v); });
        case UnaryOp::Sqrt:
          return map1<T, T>(x, out, [](T v) { return std::sqrt(v); });
        case UnaryOp::Rsqrt:
          return map1<T, T>(x, out, [](T v) { return T(1) / std::sqrt(v); });
        case UnaryOp::Tanh:
          return map1<T, T>(x, out, [](T v) { return std::tanh(v); });
        case UnaryOp::Sigmoid:
          return map1<T, T>(x, out, [](T v) { return sigmoid(v); });
        case UnaryOp::Gelu:
          return map1<T, T>(x, out, [](T v) { return gelu_erf(v); });
        case UnaryOp::GeluTanh:
          return map1<T, T>(x, out, [](T v) { return gelu_tanh(v); });
        case UnaryOp::GeluGrad:
          return map1<T, T>(x, out, [](T v) { return gelu_erf_grad(v); });
        case UnaryOp::GeluTanhGrad:
          return map1<T, T>(x, out, [](T v) { return gelu_tanh_grad(v); });
        case UnaryOp::Pow: {
          T p = static_cast<T>(alpha);
          if (alpha == 2.0) return map1<T, T>(x, out, [](T v) { return v * v; });
          return map1<T, T>(x, out, [p](T v) { return std::pow(v, p); });
        }
        default:
          break;
      }
    }
    SG_FAIL("{}: not defined for {} tensors", op_name(op), dtype_of<T>::value);
  }
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  if constexpr (std::is_same_v<T, bool>) {
    // Only comparisons and logic take bool (the ops promote bool to int64 for arithmetic).
    switch (op) {
      case BinaryOp::Eq:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x == y; });
      case BinaryOp::Ne:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x != y; });
      case BinaryOp::LogicalAnd:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x && y; });
      case BinaryOp::LogicalOr:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x || y; });
      default:
        SG_FAIL("{}: not defined for bool tensors", op_name(op));
    }
  } else {
    switch (op) {
      case BinaryOp::Add:
        return map2<T, T>(a, b, out, [](T x, T y) { return T(x + y); });
      case BinaryOp::Sub:
        return map2<T, T>(a, b, out, [](T x, T y) { return T(x - y); });
      case BinaryOp::Mul:
        return map2<T, T>(a, b, out, [](T x, T y) { return T(x * y); });
      case BinaryOp::Maximum:
        return map2<T, T>(a, b, out, [](T x, T y) { return (is_nan(x) || x > y) ? x : y; });
      case BinaryOp::Minimum:
        return map2<T, T>(a, b, out, [](T x, T y) { return (is_nan(x) || x < y) ? x : y; });
      case BinaryOp::ReluGrad:  // a select, not a product (0 * inf would be NaN)
        return map2<T, T>(a, b, out, [](T g, T y) { return y <= T(0) ? T(0) : g; });
      case BinaryOp::Eq:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x == y; });
      case BinaryOp::Ne:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x != y; });
      case BinaryOp::Lt:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x < y; });
      case BinaryOp::Le:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x <= y; });
      case BinaryOp::Gt:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x > y; });
      case BinaryOp::Ge:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x >= y; });
      case BinaryOp::LogicalAnd:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x != T(0) && y != T(0); });
      case BinaryOp::LogicalOr:
        return map2<bool, T>(a, b, out, [](T x, T y) { return x != T(0) || y != T(0); });
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case BinaryOp::Div:
          return map2<T, T>(a, b, out, [](T x, T y) { return x / y; });
        case BinaryOp::Pow:
          return map2<T, T>(a, b, out, [](T x, T y) { return std::pow(x, y); });
        default:
          break;
      }
    }
    SG_FAIL("{}: not defined for {} tensors", op_name(op), dtype_of<T>::value);
  }
}

void fill_serial(const Tensor& out, double value) {
  dispatch_dtype("fill", out.dtype(), [&]<typename T>() {
    T v = static_cast<T>(value);
    T* o = out.data_ptr<T>();
    for_each_run<1>(out.shape(), {&out.strides()},
                    [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
                      if (step[0] == 1) return std::fill(o + at[0], o + at[0] + n, v);
                      for (int64_t i = 0; i < n; ++i) o[at[0] + i * step[0]] = v;
                    });
  });
}

void copy_serial(const Tensor& src, const Tensor& dst) {
  if (copy_short_rows(src, dst)) return;  // rows of 4-64 contiguous elements (copy_rows.h)
  dispatch_dtype("copy", dst.dtype(), [&]<typename D>() {
    dispatch_dtype("copy", src.dtype(), [&]<typename S>() {
      map1<D, S>(src, dst, [](S v) { return static_cast<D>(v); });
    });
  });
}

void unary_serial(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) {
  if (op == UnaryOp::LogicalNot) {
    return dispatch_dtype("logical_not", x.dtype(), [&]<typename T>() {
      map1<bool, T>(x, out, [](T v) { return v == T(0); });
    });
  }
  dispatch_dtype(op_name(op), x.dtype(),
                 [&]<typename T>() { unary_typed<T>(op, x, out, alpha, beta); });
}

void binary_serial(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_dtype(op_name(op), a.dtype(), [&]<typename T>() { binary_typed<T>(op, a, b, out); });
}

void where_serial(const Tensor& condition, const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_dtype("where", out.dtype(), [&]<typename T>() {
    const uint8_t* c = elements<bool>(condition);
    const Bytes<T>* pa = elements<T>(a);
    const Bytes<T>* pb = elements<T>(b);
    Bytes<T>* o = elements<T>(out);
    // Both values are read before choosing (a select, not a branch), so the contiguous loops
    // vectorise; a branch on random conditions mispredicts half the time (4x slower, measured).
    for_each_run<4>(
        out.shape(), {&out.strides(), &condition.strides(), &a.strides(), &b.strides()},
        [&](const Offsets<4>& at, int64_t n, const Offsets<4>& step) {
          Bytes<T>* oo = o + at[0];
          const uint8_t* cc = c + at[1];
          const Bytes<T>* xa = pa + at[2];
          const Bytes<T>* xb = pb + at[3];
          const bool contiguous_out = step[0] == 1 && step[1] == 1;
          if (contiguous_out && step[2] == 0 && step[3] == 1) {  // masked_fill: where(m, value, x)
            const Bytes<T> va = *xa;
            for (int64_t i = 0; i < n; ++i) {
              const Bytes<T> vb = xb[i];
              oo[i] = cc[i] ? va : vb;
            }
          } else if (contiguous_out && step[2] == 1 && step[3] == 0) {  // relu's backward
            const Bytes<T> vb = *xb;
            for (int64_t i = 0; i < n; ++i) {
              const Bytes<T> va = xa[i];
              oo[i] = cc[i] ? va : vb;
            }
          } else if (contiguous_out && step[2] == 1 && step[3] == 1) {
            for (int64_t i = 0; i < n; ++i) {
              const Bytes<T> va = xa[i], vb = xb[i];
              oo[i] = cc[i] ? va : vb;
            }
          } else {
            for (int64_t i = 0; i < n; ++i) {
              const Bytes<T> va = xa[i * step[2]], vb = xb[i * step[3]];
              oo[i * step[0]] = cc[i * step[1]] ? va : vb;
            }
          }
        });
  });
}

}  // namespace

// The kernels proper: large tensors are split by rows (dim 0) over the thread pool (parallel.h);
// every operand was broadcast to out's shape by the op, so rows_of cuts them alike.
template <typename F>  // f(rows): the kernel on a block of rows, given as a function of a tensor
void over_rows(const Tensor& out, F&& f) {
  const int64_t n = out.dim() == 0 ? 1 : out.size(0), numel = out.numel();
  if (out.dim() == 0 || n < 2 || numel < 2 * kParallelGrain) {
    return f([](const Tensor& t) -> const Tensor& { return t; });
  }
  parallel_for(n, std::max<int64_t>(1, kParallelGrain / (numel / n)), [&](int64_t lo, int64_t hi) {
    f([lo, hi](const Tensor& t) { return rows_of(t, lo, hi); });
  });
}

void fill(const Tensor& out, double value) {
  over_rows(out, [&](auto rows) { fill_serial(rows(out), value); });
}
void copy(const Tensor& src, const Tensor& dst) {
  over_rows(dst, [&](auto rows) { copy_serial(rows(src), rows(dst)); });
}
void unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) {
  over_rows(out, [&](auto rows) { unary_serial(op, rows(x), rows(out), alpha, beta); });
}
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  over_rows(out, [&](auto rows) { binary_serial(op, rows(a), rows(b), rows(out)); });
}
void where(const Tensor& condition, const Tensor& a, const Tensor& b, const Tensor& out) {
  over_rows(out, [&](auto rows) { where_serial(rows(condition), rows(a), rows(b), rows(out)); });
}

void uniform(const Tensor& out, uint64_t state) {
  dispatch_floating("uniform", out.dtype(), [&]<typename T>() {
    T* o = out.data_ptr<T>();
    parallel_for(out.numel(), /*grain=*/1 << 16, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        o[i] = static_cast<T>(uniform_at(state, static_cast<uint64_t>(i) + 1));
      }
    });
  });
}

}  // namespace sg::cpu
