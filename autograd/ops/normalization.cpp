// fused_layer_norm: layer normalisation as one op with its own backward (nn::LayerNorm runs it),
// and layer_norm_composed, the same math from mean, sub, mul and rsqrt, whose backward autograd
// derives through a dozen nodes: the version to read first, and the one that runs where the
// backend has no layer-norm kernel (the reference CPU backend). A backend's kernels
// (Backend::layer_norm, layer_norm_backward) do each direction in two passes; the backward they
// write out is, for a row x of D values, x̂ = (x - mean) · rstd and ĝ = g · weight:
//   dx      = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂))
//   dweight = Σ_rows g · x̂,   dbias = Σ_rows g
// (the two mean terms are what flows back through the mean and the variance). A backward that
// records a graph (create_graph) differentiates layer_norm_composed instead
// (detail::composed_backward): the saved mean and rstd are values, not functions of x.
#include "autograd/ops/internal.h"

namespace sg {

namespace {

void check_layer_norm(const Tensor& x, const Shape& normalized_shape) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool matches = x.dim() >= k && k > 0;
  for (int64_t i = 0; matches && i < k; ++i) {
    matches = x.size(x.dim() - k + i) == normalized_shape[i];
  }
  SG_CHECK(matches, "layer_norm: input of shape {} does not end with normalized_shape {}",
           x.shape(), normalized_shape);
  SG_CHECK(x.is_floating_point(), "layer_norm: expected a floating point input, got {}", x.dtype());
}

}  // namespace

Tensor layer_norm_composed(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                           const Tensor& bias, double eps, CallSite site) {
  const CallSiteScope call_site(site);
  check_layer_norm(x, normalized_shape);
  detail::check_not_bfloat16("layer_norm_composed", {x, weight, bias});
  // --8<-- [start:ex09.layer_norm]
  std::vector<int64_t> dims;
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  for (int64_t i = 0; i < k; ++i) dims.push_back(x.dim() - k + i);
  // Composed from primitives, so autograd derives the backward; the biased variance (divide by n,
  // not n - 1) is what LayerNorm uses.
  Tensor mean = x.mean(dims, /*keepdim=*/true);
  Tensor centered = x - mean;
  Tensor var = (centered * centered).mean(dims, /*keepdim=*/true);
  Tensor y = centered * (var + eps).rsqrt();
  if (weight.defined()) y = y * weight;
  if (bias.defined()) y = y + bias;
  return y;
  // --8<-- [end:ex09.layer_norm]
}

Tensor fused_layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                        const Tensor& bias, double eps, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("fused_layer_norm");
  check_layer_norm(x, normalized_shape);
  detail::check_not_bfloat16("fused_layer_norm", {x, weight, bias});
  for (const Tensor* p : {&weight, &bias}) {
    SG_CHECK(!p->defined() || (p->shape() == normalized_shape && p->dtype() == x.dtype()),
             "layer_norm: weight and bias must be {} of shape {}, got {} of shape {}", x.dtype(),
             normalized_shape, p->dtype(), p->shape());
  }
  detail::check_same_device("layer_norm", {x, weight, bias});
  const int64_t D = numel_of(normalized_shape);
  const int64_t rows = D == 0 ? 0 : x.numel() / D;
  Backend& backend = backend_for(x.device());
  const Tensor x2 = x.detach().reshape({rows, D}).contiguous();
  const Tensor w = weight.defined() ? weight.detach().reshape({D}).contiguous() : Tensor();
  const Tensor b = bias.defined() ? bias.detach().reshape({D}).contiguous() : Tensor();

  Tensor out = empty({rows, D}, x.options());
  Tensor mean = empty({rows, 1}, x.options()), rstd = empty({rows, 1}, x.options());
  if (!backend.layer_norm(x2, w, b, eps, out, mean, rstd)) {
    return layer_norm_composed(x, normalized_shape, weight, bias, eps);
  }
  out = out.view(x.shape());

  const bool need_x = x.requires_grad(), need_w = weight.defined() && weight.requires_grad(),
             need_b = bias.defined() && bias.requires_grad();
  return record(
      "layer_norm", out, {x, weight, bias},
      [sx = SavedTensor(x2), sw = SavedTensor(w), smean = SavedTensor(mean),
       srstd = SavedTensor(rstd), sx_in = SavedTensor(x), sw_in = SavedTensor(weight),
       sb_in = SavedTensor(bias), need_x, need_w, need_b, x_shape = x.shape(),
       w_shape = normalized_shape, eps](const Tensor& g) {
        if (is_grad_enabled()) {  // create_graph
          return detail::composed_backward(
              [w_shape, eps](const std::vector<Tensor>& in) {
                return layer_norm_composed(in[0], w_shape, in[1], in[2], eps);
              },
              {sx_in.get(), sw_in.get(), sb_in.get()}, g);
        }
        const Tensor &x_ = sx.get(), &w_ = sw.get(), &mean_ = smean.get(), &rstd_ = srstd.get();
        const int64_t rows_ = x_.size(0), D_ = x_.size(1);
        Tensor g2 = g.reshape({rows_, D_}).contiguous();
        Tensor dx = need_x ? empty({rows_, D_}, g.options()) : Tensor();
        Tensor dw = need_w ? empty({D_}, g.options()) : Tensor();
        Tensor db = need_b ? empty({D_}, g.options()) : Tensor();
        const bool done =
            backend_for(g.device()).layer_norm_backward(g2, x_, mean_, rstd_, w_, dx, dw, db);
        SG_CHECK(done, "layer_norm: the backend ran the forward but not the backward");
        return Grads{need_x ? dx.view(x_shape) : Tensor(), need_w ? dw.view(w_shape) : Tensor(),
                     need_b ? db.view(w_shape) : Tensor()};
      });
}

}  // namespace sg
