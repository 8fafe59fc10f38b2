// Joining and splitting: cat, stack, split, chunk.
//
// cat copies each input into its own slab of the output, a narrow() view along dim:
//   cat({a [2, 3], b [2, 4]}, 1)  ->  out [2, 7];  out.narrow(1, 0, 3) = a,  out.narrow(1, 3, 4) =
//   b
// so its backward hands each input the same slab of g. split and chunk are the reverse: views,
// no copy, whose gradients the views' own backward puts back in place.
#include <algorithm>

#include "autograd/ops/internal.h"

namespace sg {

// ---- cat ----
// Backward: dx_i = g.narrow(dim, offset_i, size_i).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("cat");
  SG_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  const Tensor& first = tensors[0];
  SG_CHECK(first.dim() > 0, "cat: zero-dimensional tensor 0 cannot be concatenated");
  const int64_t d = normalize_dim("cat", dim, first.dim());
  Shape shape = first.shape();
  shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    SG_CHECK(t.dim() == first.dim(), "cat: tensors 0 and {} have shapes {} and {} ({} vs {} dims)",
             i, first.shape(), t.shape(), first.dim(), t.dim());
    SG_CHECK(t.dtype() == first.dtype(), "cat: tensors 0 and {} have dtypes {} and {}", i,
             first.dtype(), t.dtype());
    SG_CHECK(t.device() == first.device(), "cat: tensors 0 and {} are on {} and {}", i,
             first.device(), t.device());
    for (int64_t k = 0; k < t.dim(); ++k) {
      SG_CHECK(k == d || t.size(k) == first.size(k),
               "cat: tensors 0 and {} have shapes {} and {}, which differ outside dim {}", i,
               first.shape(), t.shape(), d);
    }
    shape[d] += t.size(d);
  }

  Tensor out = empty(shape, first.options());
  Backend& backend = backend_for(first.device());
  std::vector<int64_t> offsets, sizes;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    backend.copy(t, detail::make_view(out, t.shape(), out.strides(),
                                      out.storage_offset() + offset * out.stride(d)));
    offsets.push_back(offset);
    sizes.push_back(t.size(d));
    offset += t.size(d);
  }

  return record("cat", out, tensors, [offsets, sizes, d](const Tensor& g) {
    Grads grads;
    for (size_t i = 0; i < offsets.size(); ++i) grads.push_back(g.narrow(d, offsets[i], sizes[i]));
    return grads;
  });
}

// ---- stack ----
// A new dim of size len(tensors) at `dim`: cat of the inputs, each unsqueezed there. Composed,
// so the gradient (g's slice i, squeezed) comes from cat and unsqueeze.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("stack");
  SG_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  for (size_t i = 1; i < tensors.size(); ++i) {
    SG_CHECK(tensors[i].shape() == tensors[0].shape(),
             "stack: tensors 0 and {} have shapes {} and {}; stack needs equal shapes", i,
             tensors[0].shape(), tensors[i].shape());
  }
  const int64_t d = normalize_dim("stack", dim, tensors[0].dim() + 1);
  std::vector<Tensor> unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (const Tensor& t : tensors) unsqueezed.push_back(t.unsqueeze(d));
  return cat(unsqueezed, d);
}

// ---- split / chunk ----
// Pieces of split_size along dim (the last one may be smaller), as narrow() views.
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("split");
  SG_CHECK(x.dim() > 0, "split: expected a tensor with at least 1 dim, got a 0-d tensor");
  const int64_t d = normalize_dim("split", dim, x.dim());
  const int64_t size = x.size(d);
  SG_CHECK(split_size > 0 || (split_size == 0 && size == 0),
           "split: split_size must be positive, got {} (dim {} has size {})", split_size, d, size);
  if (size == 0) return {x.narrow(d, 0, 0)};  // one empty piece, as in PyTorch
  std::vector<Tensor> pieces;
  for (int64_t start = 0; start < size; start += split_size) {
    pieces.push_back(x.narrow(d, start, std::min(split_size, size - start)));
  }
  return pieces;
}

// PyTorch semantics: pieces of ceil(size / chunks), so there may be fewer than `chunks` pieces
// (6 split into 4 chunks gives 2, 2, 2).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("chunk");
  SG_CHECK(chunks > 0, "chunk: chunks must be positive, got {}", chunks);
  SG_CHECK(x.dim() > 0, "chunk: expected a tensor with at least 1 dim, got a 0-d tensor");
  const int64_t d = normalize_dim("chunk", dim, x.dim());
  const int64_t size = x.size(d);
  if (size == 0) {  // `chunks` empty pieces, as in PyTorch
    std::vector<Tensor> pieces;
    for (int64_t i = 0; i < chunks; ++i) pieces.push_back(x.narrow(d, 0, 0));
    return pieces;
  }
  return split(x, (size + chunks - 1) / chunks, d);
}

}  // namespace sg
