#include "autograd/shape.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include "autograd/error.h"

namespace sg {

int64_t numel_of(const Shape& shape) {
  // Every size product is checked: a wrapped product would allocate a small buffer for a huge
  // shape, and writes would then land outside it.
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : shape) overflow = __builtin_mul_overflow(n, s, &n) || overflow;
  if (overflow) {
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
    SG_FAIL("shape {} has more elements than fit in a 64-bit size", shape);
  }
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  // --8<-- [start:ex01.contiguous_strides]
  Strides strides(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    // Saturates only for a shape with a zero size (numel_of refuses any other that overflows):
    // such a tensor has no element to address.
    if (__builtin_mul_overflow(step, std::max<int64_t>(shape[i], 1), &step)) {
      step = std::numeric_limits<int64_t>::max();
    }
  }
  return strides;
  // --8<-- [end:ex01.contiguous_strides]
}

bool elements_may_overlap(const Shape& shape, const Strides& strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, size) of the dims stepped along
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return false;  // no elements
    if (shape[d] != 1) dims.emplace_back(std::abs(strides[d]), shape[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t span = 0;  // the largest offset reached by the dims so far, from their first element
  for (const auto& [stride, size] : dims) {
    if (stride <= span) return true;  // stride 0 included
    span += (size - 1) * stride;
  }
  return false;
}

int64_t normalize_dim(std::string_view op, int64_t dim, int64_t ndim) {
  // A 0-d tensor accepts dim 0 and -1, as in PyTorch.
  int64_t range = std::max<int64_t>(ndim, 1);
  SG_CHECK(dim >= -range && dim < range,
           "{}: dim {} out of range for a {}-D tensor (expected {} to {})", op, dim, ndim, -range,
           range - 1);
  return dim < 0 ? dim + range : dim;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  }
  return true;
}

Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b) {
  // --8<-- [start:ex02.broadcast_shapes]
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    // Walk from the right: position i counts from the last dim.
    int64_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    SG_CHECK(sa == sb || sa == 1 || sb == 1,
             "{}: shapes {} and {} cannot be broadcast (dim {}: {} vs {})", op, a, b, n - 1 - i, sa,
             sb);
    out[n - 1 - i] = sa == 1 ? sb : sa;
  }
  return out;
  // --8<-- [end:ex02.broadcast_shapes]
}

Shape infer_size(std::string_view op, const Shape& requested, int64_t numel) {
  Shape out = requested;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      SG_CHECK(infer_at < 0, "{}: only one dimension can be -1, got {}", op, requested);
      infer_at = static_cast<int>(i);
    } else {
      SG_CHECK(out[i] >= 0, "{}: invalid size {} in shape {}", op, out[i], requested);
      SG_CHECK(!__builtin_mul_overflow(known, out[i], &known),
               "{}: shape {} has more elements than fit in a 64-bit size", op, requested);
    }
  }
  if (infer_at >= 0) {
    SG_CHECK(known != 0 && numel % known == 0, "{}: shape {} is invalid for input of size {}", op,
             requested, numel);
    out[infer_at] = numel / known;
  } else {
    SG_CHECK(known == numel, "{}: shape {} is invalid for input of size {}", op, requested, numel);
  }
  return out;
}

DimLayout dim_layout(const Shape& shape, int64_t dim) {
  DimLayout l;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) l.outer *= shape[d];
    if (d == dim) l.D = shape[d];
    if (d > dim) l.inner *= shape[d];
  }
  return l;
}

bool is_non_overlapping_and_dense(const Shape& shape, const Strides& strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims stepped along
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return true;  // no elements
    if (shape[d] != 1) dims.emplace_back(strides[d], shape[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

}  // namespace sg
