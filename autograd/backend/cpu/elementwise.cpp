// CPU elementwise kernels that are not a math function: fill, copy (converting dtypes), where, and
// rounding to bfloat16 (a copy there and back). Each is one strided loop (strided_loop.h);
// unary.cpp and binary.cpp hold the math.
#include <algorithm>
#include <cstdint>

#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu/elementwise_loops.h"
#include "autograd/factory.h"

namespace sg::cpu {

void CpuBackend::fill(const Tensor& out, double value) {
  dispatch_dtype_and_bfloat16("fill", out.dtype(), [&]<typename T>() {
    T v = static_cast<T>(value);
    T* o = out.data_ptr<T>();
    for_each_run<1>(out.shape(), {&out.strides()},
                    [&](const Offsets<1>& at, int64_t n, const Offsets<1>& step) {
                      if (step[0] == 1) return std::fill(o + at[0], o + at[0] + n, v);
                      for (int64_t i = 0; i < n; ++i) o[at[0] + i * step[0]] = v;
                    });
  });
}

void CpuBackend::copy(const Tensor& src, const Tensor& dst) {
  dispatch_dtype_and_bfloat16("copy", dst.dtype(), [&]<typename D>() {
    dispatch_dtype_and_bfloat16("copy", src.dtype(), [&]<typename S>() {
      map1<D, S>(src, dst, [](S v) { return static_cast<D>(v); });
    });
  });
}

void CpuBackend::round_to_bfloat16(const Tensor& x, const Tensor& out) {
  Tensor half = empty(x.shape(), TensorOptions(kBFloat16).device(x.device()));
  copy(x, half);    // to nearest, ties to even (float_to_bfloat16_bits)
  copy(half, out);  // and back, exactly
}

void CpuBackend::where(const Tensor& condition, const Tensor& a, const Tensor& b,
                       const Tensor& out) {
  dispatch_dtype_and_bfloat16("where", out.dtype(), [&]<typename T>() {
    const uint8_t* c = elements<bool>(condition);
    const Bytes<T>* pa = elements<T>(a);
    const Bytes<T>* pb = elements<T>(b);
    Bytes<T>* o = elements<T>(out);
    // Both values are read before choosing (a select, not a branch), so the contiguous loops
    // vectorise; a branch on random conditions mispredicts half the time.
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

}  // namespace sg::cpu
