// Shapes and strides. A shape is a list of sizes, outermost first; strides count elements (not
// bytes) to step one index along each dimension. Contiguous (row-major) strides of [2, 3, 4] are
// [12, 4, 1]; a stride of 0 repeats one element along that dimension (broadcasting).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace sg {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);
Strides contiguous_strides(const Shape& shape);
// Whether the elements fill one block of memory without gaps or overlaps, in some order of the dims
// (contiguous, or a permutation of it such as a transpose), as PyTorch's
// is_non_overlapping_and_dense: a tensor of the same strides then walks it in the same order.
bool is_non_overlapping_and_dense(const Shape& shape, const Strides& strides);
// Whether two indices may name one element: a stride of 0 along a dim of more than one element
// (an expanded view), or strides that do not nest (each dim's stride, in increasing order, at
// least the span of the dims below it). Views made by transposing, narrowing, selecting and
// slicing always nest; an in-place write into a tensor whose elements may overlap is refused.
bool elements_may_overlap(const Shape& shape, const Strides& strides);

// Maps a possibly negative dim into [0, ndim); throws "op: dim d out of range for a n-D tensor".
int64_t normalize_dim(std::string_view op, int64_t dim, int64_t ndim);

// NumPy broadcasting: align from the right; sizes must match or be 1.
// Throws "op: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)".
Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b);
// Whether `from` broadcasts to exactly `to` (aligned from the right, sizes equal or 1).
bool broadcasts_to(const Shape& from, const Shape& to);

// A contiguous tensor of `shape` seen as [outer, D, inner] around `dim`: element (o, d, i) sits at
// (o * D + d) * inner + i. Kernels that work along one dim (softmax, gather, index_select) use it.
struct DimLayout {
  int64_t outer = 1, D = 1, inner = 1;
};
DimLayout dim_layout(const Shape& shape, int64_t dim);

// Fills in a single -1 in `requested` so that it holds `numel` elements, checking the total.
Shape infer_size(std::string_view op, const Shape& requested, int64_t numel);

}  // namespace sg
