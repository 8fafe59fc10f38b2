// Indexing: index_select (whole slices: the embedding lookup), gather (one element per
// position: picking the target's log-probability in a loss), embedding and one_hot.
//
// The backward of a lookup is a scatter: every output element came from one input element, so g
// is added back at the same place. "Added", not "written": an index that appears twice (the same
// token twice in a batch) must receive both gradients.
#include "autograd/ops/internal.h"

namespace sg {

namespace {

void check_index_dtype(std::string_view op, const Tensor& index) {
  SG_CHECK(index.dtype() == kInt64, "{}: index must be an int64 tensor, got {}", op, index.dtype());
}

}  // namespace

// ---- index_select ----
// y = the slices x[.., index[k], ..] along dim, stacked in index order:
//   x [5, 3], dim 0, index [4, 0, 4]  ->  y [3, 3] = rows 4, 0 and 4 of x.
// Backward: dx = zeros, then g's slice k is added into row index[k] (index_add).
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("index_select");
  check_index_dtype("index_select", index);
  SG_CHECK(index.dim() <= 1, "index_select: index must be 1-D, got shape {}", index.shape());
  detail::check_same_device("index_select", {x, index});
  const int64_t d = normalize_dim("index_select", dim, x.dim());
  if (x.dim() == 0) {  // PyTorch: a 0-d input gives a 0-d output, for a one-element index
    SG_CHECK(index.numel() == 1,
             "index_select: a 0-d input needs a one-element index, got shape {}", index.shape());
    return index_select(x.view({1}), 0, index).view({});
  }

  Tensor flat_index = index.detach().reshape({index.numel()}).contiguous();
  Shape shape = x.shape();
  shape[d] = flat_index.numel();
  Tensor out = empty(shape, x.options());
  backend_for(x.device()).index_select(x.detach().contiguous(), d, flat_index, out, "index_select");

  return record("index_select", out, {x, index},
                [si = SavedTensor(flat_index), d, x_shape = x.shape()](const Tensor& g) {
                  const Tensor saved_index = si.get();
                  Tensor dx = zeros(x_shape, g.options());
                  backend_for(g.device()).index_add(dx, d, saved_index, g.detach().contiguous());
                  // create_graph: dx is linear in g; its adjoint selects gg's rows again.
                  return Grads{detail::linear_in_grad("index_select_backward", dx, g,
                                                      [d, saved_index](const Tensor& gg) {
                                                        return index_select(gg, d, saved_index);
                                                      }),
                               Tensor()};
                });
}

namespace detail {
namespace {
thread_local std::string_view index_errors_name;  // empty: each op names itself
}  // namespace
IndexErrorsNamed::IndexErrorsNamed(std::string_view op) : previous_(index_errors_name) {
  if (previous_.empty()) index_errors_name = op;  // the outermost op names the error
}
IndexErrorsNamed::~IndexErrorsNamed() { index_errors_name = previous_; }
std::string_view IndexErrorsNamed::name_or(std::string_view op) {
  return index_errors_name.empty() ? op : index_errors_name;
}
}  // namespace detail

// ---- gather ----
// y has index's shape; along dim the index says which element to take, elsewhere the position is
// kept. For dim 1: y[i][j] = x[i][index[i][j]]. Backward: dx = zeros, g scattered back to the
// positions it was taken from (scatter_add).
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("gather");
  check_index_dtype("gather", index);
  detail::check_same_device("gather", {x, index});
  SG_CHECK(index.dim() == x.dim(),
           "gather: index has {} dims (shape {}) but the input has {} (shape {}); they must match",
           index.dim(), index.shape(), x.dim(), x.shape());
  const int64_t d = normalize_dim("gather", dim, x.dim());
  for (int64_t k = 0; k < x.dim(); ++k) {
    SG_CHECK(k == d || index.size(k) <= x.size(k),
             "gather: index of shape {} is larger than the input of shape {} in dim {} ({} > {})",
             index.shape(), x.shape(), k, index.size(k), x.size(k));
  }
  if (x.dim() == 0) return gather(x.view({1}), 0, index.view({1})).view({});

  Tensor index_c = index.detach().contiguous();
  Tensor out = empty(index.shape(), x.options());
  backend_for(x.device())
      .gather(x.detach().contiguous(), d, index_c, out,
              detail::IndexErrorsNamed::name_or("gather"));

  return record("gather", out, {x, index},
                [si = SavedTensor(index_c), d, x_shape = x.shape()](const Tensor& g) {
                  const Tensor saved_index = si.get();
                  Tensor dx = zeros(x_shape, g.options());
                  backend_for(g.device()).scatter_add(dx, d, saved_index, g.detach().contiguous());
                  // create_graph: dx is linear in g; its adjoint gathers gg at the indices again.
                  return Grads{detail::linear_in_grad("gather_backward", dx, g,
                                                      [d, saved_index](const Tensor& gg) {
                                                        return gather(gg, d, saved_index);
                                                      }),
                               Tensor()};
                });
}

// ---- embedding ----
// Row ids[...] of weight [V, D] for every id: y [..., D]. It is index_select on the flattened
// ids, reshaped; its own backward adds the same index_add and then zeroes the padding row, so a
// padding token (the filler after a short sentence) never moves its embedding.
//
// Note [Index checks on the device]: on the CPU the ids are checked before the lookup, so the
// error names the first bad one. On a GPU that check would copy the ids to the host and make the
// host wait for the GPU at every step; there the lookup kernel checks each id instead and records
// a bad one under the op's name ("embedding: token id 57 is out of range for 10 embeddings"),
// which the CUDA backend throws at its next call. cross_entropy and one_hot do the same.
Tensor embedding(const Tensor& weight, const Tensor& ids, std::optional<int64_t> padding_idx,
                 CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("embedding");
  SG_CHECK(weight.dim() == 2,
           "embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape {}",
           weight.shape());
  SG_CHECK(ids.dtype() == kInt64, "embedding: ids must be an int64 tensor, got {}", ids.dtype());
  detail::check_same_device("embedding", {weight, ids});
  const int64_t vocab = weight.size(0);
  std::optional<int64_t> padding_row;
  if (padding_idx) {
    SG_CHECK(*padding_idx >= -vocab && *padding_idx < vocab,
             "embedding: padding_idx {} is out of range for {} embeddings", *padding_idx, vocab);
    padding_row = *padding_idx < 0 ? *padding_idx + vocab : *padding_idx;
  }

  if (ids.numel() > 0 && ids.device().is_cpu()) {  // on a GPU the kernel checks
    int64_t lo = amin(ids).item<int64_t>(), hi = amax(ids).item<int64_t>();
    SG_CHECK(lo >= 0 && hi < vocab, "embedding: token id {} is out of range for {} embeddings",
             lo < 0 ? lo : hi, vocab);
  }
  Tensor flat_ids = ids.detach().reshape({ids.numel()}).contiguous();
  Tensor rows = empty({flat_ids.numel(), weight.size(1)}, weight.options());  // [N, D]
  backend_for(weight.device())
      .index_select(weight.detach().contiguous(), 0, flat_ids, rows, "embedding");
  Shape shape = ids.shape();
  shape.push_back(weight.size(1));
  Tensor out = rows.view(shape);

  return record(
      "embedding", out, {weight, ids},
      [si = SavedTensor(flat_ids), padding_row, w_shape = weight.shape()](const Tensor& g) {
        const Tensor ids_ = si.get();
        Tensor dweight = zeros(w_shape, g.options());
        Backend& backend = backend_for(g.device());
        backend.index_add(dweight, 0, ids_, g.detach().reshape({-1, w_shape[1]}).contiguous());
        if (padding_row) backend.fill(dweight.detach().select(0, *padding_row), 0.0);
        // create_graph: dweight is linear in g; its adjoint looks gg's rows up again (the padding
        // row of gg, which dweight never receives, is zeroed first).
        return Grads{
            detail::linear_in_grad("embedding_backward", dweight, g,
                                   [ids_, padding_row, g_shape = g.shape()](const Tensor& gg) {
                                     Tensor table = gg;
                                     if (padding_row) {
                                       Tensor keep = ones({gg.size(0), 1}, gg.options());
                                       keep.detach().select(0, *padding_row).fill_(0.0);
                                       table = gg * keep;
                                     }
                                     return index_select(table, 0, ids_).reshape(g_shape);
                                   }),
            Tensor()};
      });
}

// ---- one_hot ----
// index [...] -> int64 [..., C] with a 1 at each index's class: compare index with arange(C).
// num_classes -1 means max(index) + 1, as in PyTorch (which has to read the maximum, on a GPU too).
Tensor one_hot(const Tensor& index, int64_t num_classes, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("one_hot");
  SG_CHECK(index.dtype() == kInt64, "one_hot: index must be an int64 tensor, got {}",
           index.dtype());
  SG_CHECK(num_classes >= -1, "one_hot: num_classes must be -1 or at least 0, got {}", num_classes);
  if (index.numel() > 0 && !index.device().is_cpu() && num_classes != -1) {
    // Checked on the device (Note [Index checks on the device]): a gather from a [C] tensor
    // records any class value outside [0, C) under "one_hot".
    Tensor flat = index.detach().reshape({index.numel()}).contiguous();
    Tensor picked = empty({flat.numel()}, TensorOptions(kInt64).device(index.device()));
    backend_for(index.device())
        .gather(zeros({num_classes}, picked.options()), 0, flat, picked, "one_hot");
  } else if (index.numel() > 0) {
    const int64_t low = amin(index).item<int64_t>();
    const int64_t high = amax(index).item<int64_t>();
    SG_CHECK(low >= 0, "one_hot: class values must be non-negative, got {}", low);
    if (num_classes == -1) num_classes = high + 1;
    SG_CHECK(high < num_classes, "one_hot: class value {} is out of range for {} classes", high,
             num_classes);
  } else {
    SG_CHECK(num_classes != -1,
             "one_hot: cannot infer the number of classes from an empty tensor; pass num_classes");
  }
  Tensor classes =
      arange(static_cast<double>(num_classes), TensorOptions(kInt64).device(index.device()));
  return eq(index.detach().unsqueeze(-1), classes).to(kInt64);
}

}  // namespace sg
