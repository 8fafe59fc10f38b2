// CUDA elementwise kernels: fill, copy (with dtype conversion, bfloat16 included), unary, binary,
// where, uniform. The
// CUDA twin of cpu/elementwise.cpp: one grid-stride kernel per operand count, around a small
// functor.
//
// One kernel serves all ops of a family: the functor switches on the op at run time. The switch
// costs nothing measurable (every thread takes the same branch) and keeps the number of compiled
// kernels, and so the build time, small: one per dtype instead of one per op and dtype.
#include <cuda_bf16.h>

#include <limits>
#include <type_traits>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/generator.h"

namespace sg::cuda {

namespace {

// ---- the launch patterns: N operands walked in lockstep through one StridedLayout ----

template <typename T>
__global__ void fill_kernel(StridedLayout<1> layout, int64_t n, T* out, T value) {
  if (layout.contiguous()) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = value;
    return;
  }
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t at[1];
    layout.offsets(i, at);
    out[at[0]] = value;
  }
}

template <typename Out, typename In, typename F>
__global__ void map1_kernel(StridedLayout<2> layout, int64_t n, Out* out, const In* x, F f) {
  if (layout.contiguous()) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = f(x[i]);
    return;
  }
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t at[2];
    layout.offsets(i, at);
    out[at[0]] = f(x[at[1]]);
  }
}

template <typename Out, typename In, typename F>
__global__ void map2_kernel(StridedLayout<3> layout, int64_t n, Out* out, const In* a, const In* b,
                            F f) {
  if (layout.contiguous()) {
    for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = f(a[i], b[i]);
    return;
  }
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t at[3];
    layout.offsets(i, at);
    out[at[0]] = f(a[at[1]], b[at[2]]);
  }
}

template <typename T>
__global__ void where_kernel(StridedLayout<4> layout, int64_t n, T* out, const bool* condition,
                             const T* a, const T* b) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t at[4];
    layout.offsets(i, at);
    out[at[0]] = condition[at[1]] ? a[at[2]] : b[at[3]];
  }
}

// out = f(x) elementwise over out's shape; In and Out are the element types.
template <typename Out, typename In, typename F>
void map1(std::string_view op, const Tensor& x, const Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  auto layout = make_layout<2>(op, out.shape(), {&out.strides(), &x.strides()});
  map1_kernel<<<grid_for(n), kBlockSize>>>(layout, n, out.data_ptr<Out>(), x.data_ptr<In>(), f);
  SG_CUDA_CHECK_LAUNCH();
}

template <typename Out, typename In, typename F>
void map2(std::string_view op, const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  auto layout = make_layout<3>(op, out.shape(), {&out.strides(), &a.strides(), &b.strides()});
  map2_kernel<<<grid_for(n), kBlockSize>>>(layout, n, out.data_ptr<Out>(), a.data_ptr<In>(),
                                           b.data_ptr<In>(), f);
  SG_CUDA_CHECK_LAUNCH();
}

// ---- the functors: the same formulas as cpu/scalar_math.h ----

// bfloat16 <-> float on the device. The rounding is cuda_bf16.h's round to nearest even, which
// gives the CPU's bits (bfloat16.cpp) for every number; a NaN stays a NaN (its payload may differ).
__device__ inline float bfloat16_to_float(BFloat16 v) {
  return __uint_as_float(static_cast<uint32_t>(v.bits) << 16);
}
__device__ inline BFloat16 float_to_bfloat16(float f) {
  BFloat16 out;
  out.bits = __bfloat16_as_ushort(__float2bfloat16_rn(f));
  return out;
}

// A float rounded to bfloat16 and back: what autocast's products read.
struct RoundToBFloat16Fn {
  __device__ float operator()(float v) const { return __bfloat162float(__float2bfloat16_rn(v)); }
};

// Conversions go through float where bfloat16 is involved (a double is rounded to float first,
// as on the CPU and in PyTorch).
template <typename D, typename S>
struct CastFn {
  __device__ D operator()(S v) const {
    if constexpr (std::is_same_v<D, S>) {
      return v;
    } else if constexpr (std::is_same_v<S, BFloat16>) {
      return static_cast<D>(bfloat16_to_float(v));
    } else if constexpr (std::is_same_v<D, BFloat16>) {
      return float_to_bfloat16(static_cast<float>(v));
    } else {
      return static_cast<D>(v);
    }
  }
};

template <typename T>
struct LogicalNotFn {
  __device__ bool operator()(T v) const { return v == T(0); }
};

template <typename T>
__device__ T sigmoid(T x) {
  // Two forms so exp never overflows: for x < 0, e^x / (1 + e^x).
  if (x >= T(0)) return T(1) / (T(1) + dev_exp(-x));
  T e = dev_exp(x);
  return e / (T(1) + e);
}

// Constants of the GELUs: 1/√2, 1/√(2π) and √(2/π).
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

template <typename T>
struct UnaryFn {
  UnaryOp op;
  T alpha, beta;  // Pow: alpha = exponent; Clamp: [alpha, beta], already in T's range

  __device__ T operator()(T v) const {
    switch (op) {
      case UnaryOp::Neg:
        return static_cast<T>(-v);
      case UnaryOp::Abs:
        return v < T(0) ? T(-v) : v;
      case UnaryOp::Sign:
        return static_cast<T>((T(0) < v) - (v < T(0)));
      case UnaryOp::Square:
        return static_cast<T>(v * v);
      case UnaryOp::Relu:
        return v <= T(0) ? T(0) : v;  // NaN stays NaN, as in PyTorch
      case UnaryOp::Clamp: {
        T r = v < alpha ? alpha : v;  // NaN passes through, as in PyTorch
        return r > beta ? beta : r;
      }
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case UnaryOp::Exp:
          return dev_exp(v);
        case UnaryOp::Log:
          return dev_log(v);
        case UnaryOp::Sqrt:
          return dev_sqrt(v);
        case UnaryOp::Rsqrt:
          return T(1) / dev_sqrt(v);
        case UnaryOp::Tanh:
          return dev_tanh(v);
        case UnaryOp::Sigmoid:
          return sigmoid(v);
        case UnaryOp::Gelu:
          return T(0.5) * v * (T(1) + dev_erf(v * T(kInvSqrt2)));
        case UnaryOp::GeluGrad: {
          // d/dx x Φ(x) = Φ(x) + x φ(x)
          T cdf = T(0.5) * (T(1) + dev_erf(v * T(kInvSqrt2)));
          T pdf = dev_exp(T(-0.5) * v * v) * T(kInvSqrt2Pi);
          return cdf + v * pdf;
        }
        case UnaryOp::GeluTanh: {
          T u = T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v);
          return T(0.5) * v * (T(1) + dev_tanh(u));
        }
        case UnaryOp::GeluTanhGrad: {
          T u = T(kSqrt2OverPi) * (v + T(0.044715) * v * v * v);
          T th = dev_tanh(u);
          return T(0.5) * (T(1) + th) +
                 T(0.5) * v * (T(1) - th * th) * T(kSqrt2OverPi) * (T(1) + T(3 * 0.044715) * v * v);
        }
        case UnaryOp::Pow:
          return alpha == T(2) ? v * v : dev_pow(v, alpha);
        default:
          break;
      }
    }
    return v;  // unreachable: the host refused the op for this dtype
  }
};

// Which ops each dtype has, as in cpu/elementwise.cpp (the host checks before launching).
bool unary_defined(UnaryOp op, DType dtype) {
  if (dtype == kBool) return false;
  if (is_floating(dtype)) return true;
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Sign:
    case UnaryOp::Square:
    case UnaryOp::Relu:
    case UnaryOp::Clamp:
      return true;
    default:
      return false;
  }
}

// Arithmetic: the result has the operands' dtype.
template <typename T>
struct ArithmeticFn {
  BinaryOp op;
  __device__ T operator()(T x, T y) const {
    switch (op) {
      case BinaryOp::Add:
        return static_cast<T>(x + y);
      case BinaryOp::Sub:
        return static_cast<T>(x - y);
      case BinaryOp::Mul:
        return static_cast<T>(x * y);
      case BinaryOp::Maximum:
        return (dev_isnan(x) || x > y) ? x : y;  // NaN wins, as in PyTorch
      case BinaryOp::Minimum:
        return (dev_isnan(x) || x < y) ? x : y;
      case BinaryOp::ReluGrad:
        return y <= T(0) ? T(0) : x;
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (op) {
        case BinaryOp::Div:
          return x / y;
        case BinaryOp::Pow:
          return dev_pow(x, y);
        default:
          break;
      }
    }
    return x;  // unreachable: the host refused the op for this dtype
  }
};

// Comparisons and logic: the result is bool.
template <typename T>
struct CompareFn {
  BinaryOp op;
  __device__ bool operator()(T x, T y) const {
    switch (op) {
      case BinaryOp::Eq:
        return x == y;
      case BinaryOp::Ne:
        return x != y;
      case BinaryOp::Lt:
        return x < y;
      case BinaryOp::Le:
        return x <= y;
      case BinaryOp::Gt:
        return x > y;
      case BinaryOp::Ge:
        return x >= y;
      case BinaryOp::LogicalAnd:
        return x != T(0) && y != T(0);
      case BinaryOp::LogicalOr:
        return x != T(0) || y != T(0);
      default:
        return false;  // unreachable: only comparisons get here
    }
  }
};

bool binary_defined(BinaryOp op, DType dtype) {
  if (dtype == kBool) {
    return op == BinaryOp::Eq || op == BinaryOp::Ne || op == BinaryOp::LogicalAnd ||
           op == BinaryOp::LogicalOr;
  }
  if (dtype == kInt64) return op != BinaryOp::Div && op != BinaryOp::Pow;
  return true;
}

// out[i] = uniform_at(state, i + 1): the same formula as the CPU kernel, so the same bits.
template <typename T>
__global__ void uniform_kernel(T* out, int64_t n, uint64_t state) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    out[i] = static_cast<T>(uniform_at(state, static_cast<uint64_t>(i) + 1));
  }
}

}  // namespace

void CudaBackend::fill(const Tensor& out, double value) {
  Scope scope(*this);
  const int64_t n = out.numel();
  if (n == 0) return;
  auto layout = make_layout<1>("fill", out.shape(), {&out.strides()});
  dispatch_dtype_and_bfloat16("fill", out.dtype(), [&]<typename T>() {
    fill_kernel<<<grid_for(n), kBlockSize>>>(layout, n, out.data_ptr<T>(), static_cast<T>(value));
    SG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::copy(const Tensor& src, const Tensor& dst) {
  Scope scope(*this);
  dispatch_dtype_and_bfloat16("copy", dst.dtype(), [&]<typename D>() {
    dispatch_dtype_and_bfloat16(
        "copy", src.dtype(), [&]<typename S>() { map1<D, S>("copy", src, dst, CastFn<D, S>{}); });
  });
}

void CudaBackend::round_to_bfloat16(const Tensor& x, const Tensor& out) {
  Scope scope(*this);
  map1<float, float>("round_to_bfloat16", x, out, RoundToBFloat16Fn{});
}

void CudaBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) {
  Scope scope(*this);
  if (op == UnaryOp::LogicalNot) {
    return dispatch_dtype("logical_not", x.dtype(), [&]<typename T>() {
      map1<bool, T>("logical_not", x, out, LogicalNotFn<T>{});
    });
  }
  SG_CHECK(unary_defined(op, x.dtype()), "{}: not defined for {} tensors", op_name(op), x.dtype());
  dispatch_dtype(op_name(op), x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      // Clamp's bounds in T's range (±inf for a missing bound becomes the lowest / largest T).
      T a = static_cast<T>(alpha), b = static_cast<T>(beta);
      if (op == UnaryOp::Clamp) {
        // Compared as doubles first: converting a double beyond T's range to T is undefined
        // (double(INT64_MAX) is 2^63, one past the largest int64).
        constexpr T lowest = std::numeric_limits<T>::lowest(),
                    largest = std::numeric_limits<T>::max();
        a = alpha <= static_cast<double>(lowest) ? lowest : static_cast<T>(alpha);
        b = beta >= static_cast<double>(largest) ? largest : static_cast<T>(beta);
      } else if (!std::is_floating_point_v<T>) {
        a = b = T(0);  // integer ops take no parameter (and ±inf has no integer value)
      }
      map1<T, T>(op_name(op), x, out, UnaryFn<T>{op, a, b});
    }
  });
}

void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  Scope scope(*this);
  SG_CHECK(binary_defined(op, a.dtype()), "{}: not defined for {} tensors", op_name(op), a.dtype());
  dispatch_dtype(op_name(op), a.dtype(), [&]<typename T>() {
    if (is_comparison(op)) {
      map2<bool, T>(op_name(op), a, b, out, CompareFn<T>{op});
    } else if constexpr (!std::is_same_v<T, bool>) {
      map2<T, T>(op_name(op), a, b, out, ArithmeticFn<T>{op});
    }
  });
}

void CudaBackend::where(const Tensor& condition, const Tensor& a, const Tensor& b,
                        const Tensor& out) {
  Scope scope(*this);
  const int64_t n = out.numel();
  if (n == 0) return;
  auto layout = make_layout<4>("where", out.shape(),
                               {&out.strides(), &condition.strides(), &a.strides(), &b.strides()});
  dispatch_dtype_and_bfloat16("where", out.dtype(), [&]<typename T>() {
    where_kernel<<<grid_for(n), kBlockSize>>>(
        layout, n, out.data_ptr<T>(), condition.data_ptr<bool>(), a.data_ptr<T>(), b.data_ptr<T>());
    SG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::uniform(const Tensor& out, uint64_t state) {
  Scope scope(*this);
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_floating("uniform", out.dtype(), [&]<typename T>() {
    uniform_kernel<<<grid_for(n), kBlockSize>>>(out.data_ptr<T>(), n, state);
    SG_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sg::cuda
