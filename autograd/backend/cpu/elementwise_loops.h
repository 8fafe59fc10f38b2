// The two loops of the CPU's elementwise kernels: out = f(x) and out = f(a, b) over tensors of one
// shape with any strides (a stride of 0 is a broadcast), one run of the strided loop at a time
// (strided_loop.h). The contiguous runs get a plain loop the compiler can vectorise.
#pragma once

#include <cstdint>
#include <type_traits>

#include "autograd/backend/cpu/strided_loop.h"
#include "autograd/tensor.h"

namespace sg::cpu {

// Bools are read and written as bytes: GCC 12 vectorises no loop that loads or stores `bool`
// (it has no vector type for it), while the same loop over uint8_t becomes AVX2 code. A bool's
// byte is 0 or 1, so nothing changes but the speed (bench_kernels).
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

}  // namespace sg::cpu
