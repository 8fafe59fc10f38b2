// Selection and masking: where, masked_fill, tril, triu.
//
// `where` is the one primitive here; the others are built from it, so they need no backward of
// their own. The attention mask of a Transformer is exactly these ops:
//   auto causal = sg::ones({T, T}, sg::kBool).tril();          // true = may attend
//   scores = scores.masked_fill(causal.logical_not(), -INFINITY);
#include <cmath>

#include "autograd/ops/internal.h"

namespace sg {

// ---- where ----
// y = condition ? a : b, all three broadcast together; a and b promote to a common dtype.
// Backward: each output element came from exactly one of a and b, so g goes there and the other
// gets 0: da = where(c, g, 0), db = where(c, 0, g) (the engine sums them to a's and b's shapes).
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("where");
  SG_CHECK(condition.dtype() == kBool, "where: condition must be a bool tensor, got {}",
           condition.dtype());
  detail::check_same_device("where", {condition, a, b});
  const Shape shape =
      broadcast_shapes("where", broadcast_shapes("where", condition.shape(), a.shape()), b.shape());
  const DType dtype = promote_types(a.dtype(), b.dtype());
  Tensor out = empty(shape, TensorOptions(dtype).device(a.device()));
  backend_for(a.device())
      .where(detail::broadcast_view(condition, shape),
             detail::broadcast_view(detail::convert(a, dtype), shape),
             detail::broadcast_view(detail::convert(b, dtype), shape), out);

  // Only the gradients that are needed: masked_fill's fill value never requires grad.
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return record("where", out, {condition, a, b},
                [sc = SavedTensor(condition), need_a, need_b](const Tensor& g) {
                  const Tensor& c = sc.get();
                  Tensor zero = zeros({}, g.options());
                  return Grads{Tensor(), need_a ? where(c, g, zero) : Tensor(),
                               need_b ? where(c, zero, g) : Tensor()};
                });
}

// ---- masked_fill ----
// y = value where mask is true, else x. The mask broadcasts to x (never the other way: the
// output keeps x's shape). It is where(mask, value, x), so dx = g ⊙ !mask comes from `where`.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("masked_fill");
  SG_CHECK(mask.dtype() == kBool, "masked_fill: mask must be a bool tensor, got {}", mask.dtype());
  SG_CHECK(broadcast_shapes("masked_fill", mask.shape(), x.shape()) == x.shape(),
           "masked_fill: mask of shape {} cannot be broadcast to the input's shape {}",
           mask.shape(), x.shape());
  SG_CHECK(x.is_floating_point() || x.dtype() == kBool || holds_int64(value),
           "masked_fill: value {} is not representable in dtype {}", value, x.dtype());
  return where(mask, full({}, value, x.options()), x);
}

// ---- tril / triu ----
// Keep the lower (upper) triangle of the last two dims, zero the rest. Element (i, j) is kept
// when j - i <= diagonal (tril) or j - i >= diagonal (triu); diagonal 0 is the main diagonal.
// The keep-mask is built from two aranges, (cols - rows) compared with the diagonal, and applied
// with where, so dx = tril(g) (triu(g)) comes from where's backward.
namespace {
Tensor triangle(std::string_view op, const Tensor& x, int64_t diagonal, bool lower) {
  SG_CHECK(x.dim() >= 2, "{}: expected a tensor with at least 2 dims, got shape {}", op, x.shape());
  const TensorOptions index_options = TensorOptions(kInt64).device(x.device());
  const int64_t rows = x.size(-2), cols = x.size(-1);
  // Past either corner every element is kept or none is; clamped there, the diagonal is exact as
  // the double the comparison takes.
  diagonal = std::clamp(diagonal, -rows, cols);
  Tensor i = arange(static_cast<double>(rows), index_options).view({rows, 1});
  Tensor j = arange(static_cast<double>(cols), index_options).view({1, cols});
  Tensor offset = j - i;  // [rows, cols]: how far right of the main diagonal (i, j) is
  Tensor keep =
      lower ? offset.le(static_cast<double>(diagonal)) : offset.ge(static_cast<double>(diagonal));
  return where(keep, x, zeros({}, x.options()));
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("tril");
  return triangle("tril", x, diagonal, true);
}
Tensor triu(const Tensor& x, int64_t diagonal, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("triu");
  return triangle("triu", x, diagonal, false);
}

}  // namespace sg
