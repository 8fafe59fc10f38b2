// Views: new shape/strides/offset over the same storage, nothing copied. Backward of a view moves
// the gradient back into the input's geometry (reshape it, permute it back, or scatter it into a
// zero tensor for slices).
#include <algorithm>
#include <numeric>
#include <optional>

#include "autograd/ops/internal.h"

namespace sg {

namespace detail {

Tensor make_view(const Tensor& x, Shape shape, Strides strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = x.impl()->storage;
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = x.dtype();
  return Tensor(std::move(impl));
}

Tensor broadcast_view(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t lead = static_cast<int64_t>(shape.size()) - x.dim();
  SG_CHECK(lead >= 0, "expand: cannot expand shape {} to fewer dims {}", x.shape(), shape);
  for (int64_t size : shape) {
    SG_CHECK(size >= 0, "expand: the target shape {} has a negative size (shape {})", shape,
             x.shape());
  }
  numel_of(shape);  // an element count past 64 bits is an error, not a wrapped numel()
  Strides strides(shape.size(), 0);
  for (int64_t d = 0; d < x.dim(); ++d) {
    int64_t want = shape[lead + d];
    if (x.size(d) == want) {
      strides[lead + d] = x.stride(d);
    } else {
      SG_CHECK(x.size(d) == 1,
               "expand: the expanded size {} must match the existing size {} at dim {} (shape "
               "{} to {})",
               want, x.size(d), d, x.shape(), shape);
    }
  }
  return make_view(x, shape, strides, x.storage_offset());
}

Tensor convert(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = empty(x.shape(), TensorOptions(dtype).device(x.device()));
  backend_for(x.device()).copy(x, out);
  return out;
}

void check_same_device(std::string_view op, std::initializer_list<Tensor> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (first == nullptr) {
      first = &t;
      continue;
    }
    SG_CHECK(t.device() == first->device(), "{}: tensors are on {} and {}; move them to one device",
             op, first->device(), t.device());
  }
}

void check_floating(std::string_view op, const Tensor& x) {
  if (x.dtype() == kBFloat16) refuse_bfloat16(op);
  SG_CHECK(is_floating(x.dtype()), "{}: expected a float32 or float64 tensor, got {}", op,
           x.dtype());
}

void check_not_bfloat16(std::string_view op, std::initializer_list<Tensor> tensors) {
  for (const Tensor& t : tensors) {
    if (t.defined() && t.dtype() == kBFloat16) refuse_bfloat16(op);
  }
}

}  // namespace detail

using detail::make_view;

namespace {

// Strides that let `shape` view memory laid out as (old_shape, old_strides), if any exist: dims
// may be merged or split only within runs that are contiguous with each other. (The algorithm of
// PyTorch's computeStride.)
std::optional<Strides> view_strides(const Shape& old_shape, const Strides& old_strides,
                                    const Shape& shape) {
  Strides strides(shape.size(), 1);
  if (old_shape.empty()) return strides;
  if (numel_of(old_shape) == 0) return contiguous_strides(shape);
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_shape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_shape[tensor_d];
    // End of a contiguous chunk: the next dim out does not continue this one's memory.
    bool chunk_ends =
        tensor_d == 0 || (old_shape[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
      strides[view_d] = view_numel * chunk_base_stride;
      view_numel *= shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (tensor_d > 0) {
      chunk_base_stride = old_strides[tensor_d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

// Gradient of a slice-like view: zeros of the input's shape with g written into the viewed part.
// `make` takes the same view of any tensor; it is also the adjoint, for a graph of the gradient.
template <typename MakeView>
Tensor scatter_into_zeros(const Tensor& g, const Shape& input_shape, MakeView make) {
  Tensor z = zeros(input_shape, g.options());
  {
    NoGradGuard no_grad;
    backend_for(z.device()).copy(g, make(z));
  }
  return detail::linear_in_grad("slice_backward", z, g, make);
}

}  // namespace

Tensor view(const Tensor& x, const Shape& shape, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("view");
  Shape target = infer_size("view", shape, x.numel());
  std::optional<Strides> strides = view_strides(x.shape(), x.strides(), target);
  SG_CHECK(strides.has_value(),
           "view: shape {} is not compatible with the input's shape {} and strides {} (some "
           "merged dims are not contiguous in memory); use reshape(), which copies when needed",
           target, x.shape(), x.strides());
  Tensor out = make_view(x, target, *strides, x.storage_offset());
  Shape in_shape = x.shape();
  return record("view", out, {x},
                [in_shape](const Tensor& g) { return Grads{g.reshape(in_shape)}; });
}

Tensor reshape(const Tensor& x, const Shape& shape, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("reshape");
  Shape target = infer_size("reshape", shape, x.numel());
  if (view_strides(x.shape(), x.strides(), target)) return view(x, target);
  return view(contiguous(x), target);
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("transpose");
  // --8<-- [start:ex01.transpose]
  int64_t d0 = normalize_dim("transpose", dim0, x.dim());
  int64_t d1 = normalize_dim("transpose", dim1, x.dim());
  if (x.dim() == 0) return view(x, {});
  Shape shape = x.shape();
  Strides strides = x.strides();
  std::swap(shape[d0], shape[d1]);
  std::swap(strides[d0], strides[d1]);
  Tensor out = make_view(x, shape, strides, x.storage_offset());
  return record("transpose", out, {x},
                [d0, d1](const Tensor& g) { return Grads{g.transpose(d0, d1)}; });
  // --8<-- [end:ex01.transpose]
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("permute");
  SG_CHECK(static_cast<int64_t>(dims.size()) == x.dim(),
           "permute: got {} dims {} for a tensor of shape {}", dims.size(), dims, x.shape());
  std::vector<int64_t> order(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    order[i] = normalize_dim("permute", dims[i], x.dim());
    SG_CHECK(!seen[order[i]], "permute: dim {} appears twice in {}", order[i], dims);
    seen[order[i]] = true;
  }
  Shape shape(dims.size());
  Strides strides(dims.size());
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    shape[i] = x.size(order[i]);
    strides[i] = x.stride(order[i]);
    inverse[order[i]] = static_cast<int64_t>(i);
  }
  Tensor out = make_view(x, shape, strides, x.storage_offset());
  return record("permute", out, {x},
                [inverse](const Tensor& g) { return Grads{g.permute(inverse)}; });
}

Tensor unsqueeze(const Tensor& x, int64_t dim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("unsqueeze");
  int64_t d = normalize_dim("unsqueeze", dim, x.dim() + 1);
  Shape shape = x.shape();
  Strides strides = x.strides();
  int64_t stride = d < x.dim() ? x.stride(d) * x.size(d) : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  Tensor out = make_view(x, shape, strides, x.storage_offset());
  Shape in_shape = x.shape();
  return record("unsqueeze", out, {x},
                [in_shape](const Tensor& g) { return Grads{g.reshape(in_shape)}; });
}

Tensor squeeze(const Tensor& x, std::optional<int64_t> dim, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("squeeze");
  Shape shape;
  Strides strides;
  std::optional<int64_t> only;
  if (dim) only = normalize_dim("squeeze", *dim, x.dim());
  for (int64_t d = 0; d < x.dim(); ++d) {
    bool drop = x.size(d) == 1 && (!only || *only == d);
    if (drop) continue;
    shape.push_back(x.size(d));
    strides.push_back(x.stride(d));
  }
  Tensor out = make_view(x, shape, strides, x.storage_offset());
  Shape in_shape = x.shape();
  return record("squeeze", out, {x},
                [in_shape](const Tensor& g) { return Grads{g.reshape(in_shape)}; });
}

Tensor expand(const Tensor& x, const Shape& shape, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("expand");
  SG_CHECK(static_cast<int64_t>(shape.size()) >= x.dim(),
           "expand: the target shape {} has fewer dims than the tensor's shape {}", shape,
           x.shape());
  Shape target = shape;
  const int64_t lead = static_cast<int64_t>(shape.size()) - x.dim();
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (shape[d] != -1) continue;
    SG_CHECK(d >= lead, "expand: -1 is not allowed in a new leading dim ({} for shape {})", shape,
             x.shape());
    target[d] = x.size(d - lead);
  }
  Tensor out = detail::broadcast_view(x, target);
  if (out.is_same(x)) out = make_view(x, x.shape(), x.strides(), x.storage_offset());
  Shape in_shape = x.shape();
  // forward: every element of x is repeated along the broadcast dims, so dx sums g over them.
  return record("expand", out, {x},
                [in_shape](const Tensor& g) { return Grads{sum_to(g, in_shape)}; });
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step,
             CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("slice");
  SG_CHECK(x.dim() > 0, "slice: cannot slice a 0-d tensor");
  int64_t d = normalize_dim("slice", dim, x.dim());
  SG_CHECK(step > 0, "slice: step must be positive, got {}", step);
  const int64_t size = x.size(d);
  // Python slicing: negative positions count from the end; out-of-range positions are clamped.
  auto clamp_position = [size](int64_t p) {
    if (p < 0) p += size;
    return std::clamp<int64_t>(p, 0, size);
  };
  int64_t s = clamp_position(start), e = clamp_position(end);
  int64_t length = e > s ? (e - s + step - 1) / step : 0;
  Shape shape = x.shape();
  Strides strides = x.strides();
  shape[d] = length;
  strides[d] *= step;
  Tensor out = make_view(x, shape, strides, x.storage_offset() + s * x.stride(d));
  Shape in_shape = x.shape();
  return record("slice", out, {x}, [in_shape, d, s, e, step](const Tensor& g) {
    return Grads{scatter_into_zeros(
        g, in_shape, [d, s, e, step](const Tensor& z) { return slice(z, d, s, e, step); })};
  });
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("narrow");
  SG_CHECK(x.dim() > 0, "narrow: cannot narrow a 0-d tensor");
  int64_t d = normalize_dim("narrow", dim, x.dim());
  const int64_t size = x.size(d);
  SG_CHECK(start >= -size && start <= size,
           "narrow: start {} is out of range for dim {} of size {}", start, d, size);
  if (start < 0) start += size;
  SG_CHECK(length >= 0 && length <= size - start,  // start + length could overflow
           "narrow: start {} + length {} exceeds dim {} of size {} (shape {})", start, length, d,
           size, x.shape());
  return slice(x, d, start, start + length, 1);
}

Tensor select(const Tensor& x, int64_t dim, int64_t index, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("select");
  SG_CHECK(x.dim() > 0, "select: cannot select from a 0-d tensor");
  int64_t d = normalize_dim("select", dim, x.dim());
  const int64_t size = x.size(d);
  SG_CHECK(index >= -size && index < size,
           "select: index {} is out of range for dim {} of size {} (shape {})", index, d, size,
           x.shape());
  if (index < 0) index += size;
  Shape shape = x.shape();
  Strides strides = x.strides();
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  Tensor out = make_view(x, shape, strides, x.storage_offset() + index * x.stride(d));
  Shape in_shape = x.shape();
  return record("select", out, {x}, [in_shape, d, index](const Tensor& g) {
    return Grads{scatter_into_zeros(g, in_shape,
                                    [d, index](const Tensor& z) { return select(z, d, index); })};
  });
}

Tensor contiguous(const Tensor& x, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("contiguous");
  if (x.is_contiguous()) return x;
  Tensor out = empty(x.shape(), x.options());
  backend_for(x.device()).copy(x, out);
  return record("contiguous", out, {x}, [](const Tensor& g) { return Grads{g}; });
}

Tensor to_dtype(const Tensor& x, DType dtype, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("to_dtype");
  if (x.dtype() == dtype) return x;
  Tensor out = detail::convert(x, dtype);
  if (!is_floating(dtype) || !is_floating(x.dtype())) return out;  // no gradient through ints
  DType in_dtype = x.dtype();
  return record("to", out, {x}, [in_dtype](const Tensor& g) { return Grads{g.to(in_dtype)}; });
}

}  // namespace sg
