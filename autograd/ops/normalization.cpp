// fused_layer_norm: layer normalisation as one op with its own backward (nn::LayerNorm runs it).
//
// nn::layer_norm composes the same math from mean, sub, mul and rsqrt, and autograd derives its
// backward through a dozen nodes; that is the version to read first (nn/layer_norm.cpp). Here the
// backward is written out, for a row x of D values, x̂ = (x - mean) · rstd and ĝ = g · weight:
//   dx      = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂))
//   dweight = Σ_rows g · x̂,   dbias = Σ_rows g
// (the two mean terms are what flows back through the mean and the variance). A backend with the
// fused kernels does each direction in two passes; others run the formulas below with ops. A
// backward that records a graph (create_graph) differentiates the composed forward instead
// (detail::composed_backward): the saved mean and rstd are values, not functions of x.
#include "autograd/ops/internal.h"

namespace sg {

namespace {

// x [rows, D] with mean, rstd [rows, 1] -> x̂, composed (for backends without the fused kernels).
Tensor normalized(const Tensor& x, const Tensor& mean, const Tensor& rstd) {
  return (x - mean) * rstd;
}

// The forward as ops, over x viewed [rows, D] (the version composed_backward differentiates).
Tensor composed_layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t rows,
                           int64_t D, double eps) {
  const Tensor x2 = x.reshape({rows, D});
  const Tensor centered = x2 - x2.mean({1}, /*keepdim=*/true);
  Tensor y = centered * ((centered * centered).mean({1}, /*keepdim=*/true) + eps).rsqrt();
  if (weight.defined()) y = y * weight.reshape({D});
  if (bias.defined()) y = y + bias.reshape({D});
  return y.view(x.shape());
}

}  // namespace

Tensor fused_layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                        const Tensor& bias, double eps) {
  SG_PROFILE_OP("fused_layer_norm");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool matches = x.dim() >= k && k > 0;
  for (int64_t i = 0; matches && i < k; ++i) {
    matches = x.size(x.dim() - k + i) == normalized_shape[i];
  }
  SG_CHECK(matches, "layer_norm: input of shape {} does not end with normalized_shape {}",
           x.shape(), normalized_shape);
  SG_CHECK(x.is_floating_point(), "layer_norm: expected a floating point input, got {}", x.dtype());
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
    NoGradGuard no_grad;
    mean = x2.mean({1}, /*keepdim=*/true);
    Tensor centered = x2 - mean;
    rstd = ((centered * centered).mean({1}, /*keepdim=*/true) + eps).rsqrt();
    out = centered * rstd;
    if (w.defined()) out = out * w;
    if (b.defined()) out = out + b;
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
          const int64_t D_ = numel_of(w_shape);
          const int64_t rows_ = D_ == 0 ? 0 : numel_of(x_shape) / D_;
          return detail::composed_backward(
              [rows_, D_, eps](const std::vector<Tensor>& in) {
                return composed_layer_norm(in[0], in[1], in[2], rows_, D_, eps);
              },
              {sx_in.get(), sw_in.get(), sb_in.get()}, g);
        }
        const Tensor &x_ = sx.get(), &w_ = sw.get(), &mean_ = smean.get(), &rstd_ = srstd.get();
        const int64_t rows_ = x_.size(0), D_ = x_.size(1);
        Tensor g2 = g.reshape({rows_, D_}).contiguous();
        Tensor dx = need_x ? empty({rows_, D_}, g.options()) : Tensor();
        Tensor dw = need_w ? empty({D_}, g.options()) : Tensor();
        Tensor db = need_b ? empty({D_}, g.options()) : Tensor();
        if (!backend_for(g.device()).layer_norm_backward(g2, x_, mean_, rstd_, w_, dx, dw, db)) {
          const Tensor xhat = normalized(x_, mean_, rstd_);
          const Tensor ghat = w_.defined() ? g2 * w_ : g2;
          if (need_x) {
            dx = rstd_ * (ghat - ghat.mean({1}, true) - xhat * (ghat * xhat).mean({1}, true));
          }
          if (need_w) dw = (g2 * xhat).sum({0});
          if (need_b) db = g2.sum({0});
        }
        return Grads{need_x ? dx.view(x_shape) : Tensor(), need_w ? dw.view(w_shape) : Tensor(),
                     need_b ? db.view(w_shape) : Tensor()};
      });
}

}  // namespace sg
