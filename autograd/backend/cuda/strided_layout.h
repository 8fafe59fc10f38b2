// StridedLayout<N>: where element i (in row-major order) of N same-shaped operands lives, in a
// small struct a kernel takes by value. The CUDA twin of cpu/strided_loop.h: the same merging of
// dims first, so a contiguous tensor of any shape is one dim of numel elements, a row broadcast
// over a matrix is two dims, and only what is left needs divisions per element.
//
//   auto layout = make_layout<2>("exp", out.shape(), {&out.strides(), &x.strides()});
//   // in the kernel, for element i:
//   int64_t at[2];
//   layout.offsets(i, at);            // out[at[0]] = f(x[at[1]])
//
// Plain C++ (no CUDA headers), so the host tests check it on machines without a GPU.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "autograd/error.h"
#include "autograd/shape.h"

#ifndef SG_HOST_DEVICE  // also defined by autograd/generator.h
#if defined(__CUDACC__)
#define SG_HOST_DEVICE __host__ __device__
#else
#define SG_HOST_DEVICE
#endif
#endif

namespace sg::cuda {

// Dims a kernel can step through after merging; more is rare (and refused with a clear error).
inline constexpr int kMaxDims = 8;

template <int N>
struct StridedLayout {
  int ndim = 1;
  bool index32 = true;  // numel < 2^32: divide in 32 bits, several times faster on a GPU
  int64_t sizes[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};

  // True when every operand is contiguous and laid out alike: element i is at offset i.
  SG_HOST_DEVICE bool contiguous() const {
    if (ndim != 1) return false;
    for (int k = 0; k < N; ++k) {
      if (strides[k][0] != 1) return false;
    }
    return true;
  }

  // The offsets (in elements) of element `linear` in every operand.
  SG_HOST_DEVICE void offsets(int64_t linear, int64_t (&at)[N]) const {
    for (int k = 0; k < N; ++k) at[k] = 0;
    // Peel coordinates off from the innermost dim; the outermost needs no division.
    if (index32) {
      auto rest = static_cast<uint32_t>(linear);
      for (int d = ndim - 1; d > 0; --d) {
        const auto size = static_cast<uint32_t>(sizes[d]);
        const uint32_t i = rest % size;
        rest /= size;
        for (int k = 0; k < N; ++k) at[k] += static_cast<int64_t>(i) * strides[k][d];
      }
      for (int k = 0; k < N; ++k) at[k] += static_cast<int64_t>(rest) * strides[k][0];
    } else {
      int64_t rest = linear;
      for (int d = ndim - 1; d > 0; --d) {
        const int64_t i = rest % sizes[d];
        rest /= sizes[d];
        for (int k = 0; k < N; ++k) at[k] += i * strides[k][d];
      }
      for (int k = 0; k < N; ++k) at[k] += rest * strides[k][0];
    }
  }
};

// Builds the layout of `shape` for N operands with the given strides (0 = broadcast): dims of
// size 1 are dropped and neighbours laid out back to back in every operand are merged, exactly as
// cpu::for_each_run does. An empty or one-element shape becomes one dim. `op` names the caller
// in the error for more than kMaxDims dims that cannot be merged.
template <int N>
StridedLayout<N> make_layout(std::string_view op, const Shape& shape,
                             const std::array<const Strides*, N>& strides) {
  StridedLayout<N> layout;
  int nd = 0;
  int64_t numel = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    numel *= shape[d];
    if (shape[d] == 1) continue;
    bool mergeable = nd > 0;
    for (int k = 0; k < N && mergeable; ++k) {
      mergeable = layout.strides[k][nd - 1] == (*strides[k])[d] * shape[d];
    }
    if (mergeable) {
      layout.sizes[nd - 1] *= shape[d];
      for (int k = 0; k < N; ++k) layout.strides[k][nd - 1] = (*strides[k])[d];
      continue;
    }
    SG_CHECK(nd < kMaxDims,
             "{}: the CUDA kernels handle at most {} dims that cannot be merged, got shape {} "
             "(make the tensor contiguous first)",
             op, kMaxDims, shape);
    layout.sizes[nd] = shape[d];
    for (int k = 0; k < N; ++k) layout.strides[k][nd] = (*strides[k])[d];
    ++nd;
  }
  if (nd == 0) {  // one element (or none): a single dim of size 1 at offset 0
    layout.sizes[0] = 1;
    for (int k = 0; k < N; ++k) layout.strides[k][0] = 0;
    nd = 1;
  }
  layout.ndim = nd;
  layout.index32 = numel <= int64_t{0xFFFFFFFF};
  return layout;
}

}  // namespace sg::cuda
