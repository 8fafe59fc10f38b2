// CUDA elementwise kernels: fill, copy (with dtype conversion, bfloat16 included), unary, binary,
// where, uniform. The
// CUDA twin of cpu/elementwise.cpp: one grid-stride kernel per operand count, around a small
// functor.
//
// One kernel serves all ops of a family: the functor switches on the op at run time (through
// elementwise_math.h's with_unary, the math the CPU kernels share). The switch costs nothing
// measurable (every thread takes the same branch) and keeps the number of compiled kernels, and so
// the build time, small: one per dtype instead of one per op and dtype.
#include <cuda_bf16.h>

#include <limits>
#include <type_traits>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/backend/elementwise_math.h"
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
  map1_kernel<<<grid_for(n), kBlockSize, 0, launch_stream()>>>(layout, n, out.data_ptr<Out>(),
                                                               x.data_ptr<In>(), f);
  SG_CUDA_CHECK_LAUNCH();
}

template <typename Out, typename In, typename F>
void map2(std::string_view op, const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  auto layout = make_layout<3>(op, out.shape(), {&out.strides(), &a.strides(), &b.strides()});
  map2_kernel<<<grid_for(n), kBlockSize, 0, launch_stream()>>>(
      layout, n, out.data_ptr<Out>(), a.data_ptr<In>(), b.data_ptr<In>(), f);
  SG_CUDA_CHECK_LAUNCH();
}

// ---- the functors: each op's math is elementwise_math.h's, shared with the CPU kernels ----

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

// One functor per dtype for every unary op: the switch on the op runs in the kernel.
template <typename T>
struct UnaryFn {
  UnaryOp op;
  T alpha, beta;  // Pow: alpha = exponent; Clamp: [alpha, beta], already in T's range
  __device__ T operator()(T v) const {
    return elementwise::with_unary<T>(op, alpha, beta, [v](auto f) { return f(v); });
  }
};

template <typename T>
struct ArithmeticFn {
  BinaryOp op;
  __device__ T operator()(T x, T y) const {
    return elementwise::with_arithmetic<T>(op, [x, y](auto f) { return f(x, y); });
  }
};

// out[i] = uniform_at(state, i + 1): the same formula as the CPU kernel, so the same bits. The
// state comes by value, or from the device in a CUDA graph (written before each replay).
template <typename T>
__global__ void uniform_kernel(T* out, int64_t n, uint64_t by_value, const int64_t* on_device) {
  const uint64_t state = on_device != nullptr ? static_cast<uint64_t>(*on_device) : by_value;
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
    fill_kernel<<<grid_for(n), kBlockSize, 0, launch_stream()>>>(layout, n, out.data_ptr<T>(),
                                                                 static_cast<T>(value));
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
      map1<bool, T>("logical_not", x, out, elementwise::LogicalNot<T>{});
    });
  }
  dispatch_dtype(op_name(op), x.dtype(), [&]<typename T>() {
    SG_CHECK(elementwise::unary_defined<T>(op), "{}: not defined for {} tensors", op_name(op),
             x.dtype());
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
  dispatch_dtype(op_name(op), a.dtype(), [&]<typename T>() {
    SG_CHECK(elementwise::binary_defined<T>(op), "{}: not defined for {} tensors", op_name(op),
             a.dtype());
    if (is_comparison(op)) {
      map2<bool, T>(op_name(op), a, b, out, elementwise::Compare<T>{op});
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
    where_kernel<<<grid_for(n), kBlockSize, 0, launch_stream()>>>(
        layout, n, out.data_ptr<T>(), condition.data_ptr<bool>(), a.data_ptr<T>(), b.data_ptr<T>());
    SG_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::uniform(const Tensor& out, uint64_t state) {
  Scope scope(*this);
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_floating("uniform", out.dtype(), [&]<typename T>() {
    uniform_kernel<<<grid_for(n), kBlockSize, 0, launch_stream()>>>(out.data_ptr<T>(), n, state,
                                                                    nullptr);
    SG_CUDA_CHECK_LAUNCH();
  });
}

bool CudaBackend::uniform_from_device(const Tensor& out, const Tensor& state) {
  Scope scope(*this);
  const int64_t n = out.numel();
  if (n == 0) return true;
  dispatch_floating("uniform", out.dtype(), [&]<typename T>() {
    uniform_kernel<<<grid_for(n), kBlockSize, 0, launch_stream()>>>(out.data_ptr<T>(), n, 0,
                                                                    state.data_ptr<int64_t>());
    SG_CUDA_CHECK_LAUNCH();
  });
  return true;
}

}  // namespace sg::cuda
