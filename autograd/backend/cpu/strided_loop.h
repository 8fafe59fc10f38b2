// The one loop every CPU elementwise kernel uses: visit all elements of N operands that share a
// shape but have their own strides (0 = broadcast), one contiguous-ish run at a time.
//
//   for_each_run<2>(out.shape(), {out.strides(), x.strides()},
//                   [&](const Offsets<2>& at, int64_t n, const Offsets<2>& step) {
//                     for (int64_t i = 0; i < n; ++i) o[at[0] + i * step[0]] = f(p[at[1] + i *
//                     step[1]]);
//                   });
//
// Dims of size 1 are dropped and neighbouring dims that are laid out back to back in every operand
// are merged first, so a contiguous tensor of any shape becomes one run of numel elements.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "autograd/shape.h"

namespace sg::cpu {

template <size_t N>
using Offsets = std::array<int64_t, N>;

template <size_t N, typename Run>
void for_each_run(const Shape& shape, const std::array<Strides, N>& strides, Run&& run) {
  // 1. Coalesce: sizes[d] and per-operand strides[k][d], outermost first.
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return;  // nothing to visit
    if (shape[d] == 1) continue;
    bool mergeable = !sizes.empty();
    for (size_t k = 0; k < N && mergeable; ++k) {
      mergeable = st[k].back() == strides[k][d] * shape[d];
    }
    if (mergeable) {
      sizes.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) st[k].back() = strides[k][d];
    } else {
      sizes.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][d]);
    }
  }
  Offsets<N> at{};
  if (sizes.empty()) {  // a single element
    Offsets<N> step{};
    run(at, int64_t{1}, step);
    return;
  }
  // 2. The innermost dim is the run; count through the outer dims like an odometer.
  const size_t inner = sizes.size() - 1;
  Offsets<N> step;
  for (size_t k = 0; k < N; ++k) step[k] = st[k][inner];
  std::vector<int64_t> index(inner, 0);
  while (true) {
    run(at, sizes[inner], step);
    size_t d = inner;
    while (d-- > 0) {
      for (size_t k = 0; k < N; ++k) at[k] += st[k][d];
      if (++index[d] < sizes[d]) break;
      for (size_t k = 0; k < N; ++k) at[k] -= st[k][d] * sizes[d];
      index[d] = 0;
      if (d == 0) return;
    }
    if (inner == 0) return;
  }
}

}  // namespace sg::cpu
