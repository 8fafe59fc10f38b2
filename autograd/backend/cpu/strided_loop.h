// The one loop every CPU elementwise kernel uses: visit all elements of N operands that share a
// shape but have their own strides (0 = broadcast), one contiguous-ish run at a time.
//
//   for_each_run<2>(out.shape(), {&out.strides(), &x.strides()},
//                   [&](const Offsets<2>& at, int64_t n, const Offsets<2>& step) {
//                     for (int64_t i = 0; i < n; ++i) o[at[0] + i * step[0]] = f(p[at[1] + i *
//                     step[1]]);
//                   });
//
// Dims of size 1 are dropped and neighbouring dims that are laid out back to back in every operand
// are merged first, so a contiguous tensor of any shape becomes one run of numel elements.
//
// It runs for every op, often on small tensors, so it never allocates: the merged dims live in
// fixed arrays on the stack (a tensor with more than kMaxLoopDims dims that do not merge is
// walked one outer index at a time).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "autograd/shape.h"

namespace sg::cpu {

template <size_t N>
using Offsets = std::array<int64_t, N>;

inline constexpr size_t kMaxLoopDims = 8;

// The merged geometry of N operands: sizes[d] and strides[k][d], outermost first.
template <size_t N>
struct MergedDims {
  size_t ndim = 0;
  bool empty = false;  // some dim has size 0: nothing to visit
  std::array<int64_t, kMaxLoopDims> sizes{};
  std::array<std::array<int64_t, kMaxLoopDims>, N> strides{};
};

// Merges dims [first, last) of the operands; false if more than kMaxLoopDims remain.
template <size_t N>
bool merge_dims(const Shape& shape, const std::array<const Strides*, N>& strides, size_t first,
                size_t last, MergedDims<N>& m) {
  m.ndim = 0;
  m.empty = false;
  for (size_t d = first; d < last; ++d) {
    if (shape[d] == 0) {
      m.empty = true;
      return true;
    }
    if (shape[d] == 1) continue;
    bool mergeable = m.ndim > 0;
    for (size_t k = 0; k < N && mergeable; ++k) {
      mergeable = m.strides[k][m.ndim - 1] == (*strides[k])[d] * shape[d];
    }
    if (mergeable) {
      m.sizes[m.ndim - 1] *= shape[d];
      for (size_t k = 0; k < N; ++k) m.strides[k][m.ndim - 1] = (*strides[k])[d];
      continue;
    }
    if (m.ndim == kMaxLoopDims) return false;
    m.sizes[m.ndim] = shape[d];
    for (size_t k = 0; k < N; ++k) m.strides[k][m.ndim] = (*strides[k])[d];
    ++m.ndim;
  }
  return true;
}

// Calls run(at, n, step) for each innermost run of the merged dims, starting from offsets `base`.
template <size_t N, typename Run>
void for_each_merged_run(const MergedDims<N>& m, Offsets<N> at, Run&& run) {
  if (m.empty) return;
  if (m.ndim == 0) {  // a single element
    run(at, int64_t{1}, Offsets<N>{});
    return;
  }
  const size_t inner = m.ndim - 1;
  Offsets<N> step;
  for (size_t k = 0; k < N; ++k) step[k] = m.strides[k][inner];
  std::array<int64_t, kMaxLoopDims> index{};
  while (true) {
    run(at, m.sizes[inner], step);
    // Odometer over the outer dims, innermost of them first.
    size_t d = inner;
    while (true) {
      if (d == 0) return;
      --d;
      for (size_t k = 0; k < N; ++k) at[k] += m.strides[k][d];
      if (++index[d] < m.sizes[d]) break;
      for (size_t k = 0; k < N; ++k) at[k] -= m.strides[k][d] * m.sizes[d];
      index[d] = 0;
    }
  }
}

namespace detail {
template <size_t N, typename Run>
void for_each_run_from(const Shape& shape, const std::array<const Strides*, N>& strides,
                       size_t first, Offsets<N> at, Run& run) {
  MergedDims<N> m;
  if (merge_dims(shape, strides, first, shape.size(), m)) return for_each_merged_run(m, at, run);
  // Too many dims that do not merge: walk the outermost one here and the rest recursively.
  for (int64_t i = 0; i < shape[first]; ++i) {
    Offsets<N> next = at;
    for (size_t k = 0; k < N; ++k) next[k] += i * (*strides[k])[first];
    for_each_run_from(shape, strides, first + 1, next, run);
  }
}
}  // namespace detail

template <size_t N, typename Run>
void for_each_run(const Shape& shape, const std::array<const Strides*, N>& strides, Run&& run) {
  detail::for_each_run_from(shape, strides, 0, Offsets<N>{}, run);
}

}  // namespace sg::cpu
