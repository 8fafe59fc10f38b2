// fused_linear: y = x·Wᵀ + b as one op (torch.nn.functional.linear), the layer every Transformer
// block runs six to ten times.
//
// nn::linear (nn/linear.cpp) is the same math composed from matmul and add, the version chapter 5
// reads; the tests check the two agree. Fused, the bias costs no pass of its own: it is copied
// into the output first, and the product is accumulated onto it (BLAS's beta = 1), where the
// composition writes the product, then reads it back to add the bias into a second tensor. A
// backend may do the whole layer, forward or backward, in one job of its own (Backend::linear
// and linear_backward: the CPU's for layers of at most 64 features, backend/cpu/linear.cpp, where
// the bias is where the sums start); where it does not, the layer is composed as below.
// Backward, with x [rows, in] (batch dims flattened), W [out, in], g = dL/dy [rows, out]:
//   dx = g·W          [rows, in]
//   dW = gᵀ·x         [out, in]   (contiguous, like W: no transpose to undo)
//   db = Σ_rows g     [out]
#include "autograd/ops/internal.h"

namespace sg {

namespace {

void check_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  SG_CHECK(x.defined() && weight.defined(), "fused_linear: got an undefined input or weight");
  detail::check_floating("fused_linear", x);
  SG_CHECK(weight.dim() == 2,
           "fused_linear: weight must be 2-D [out_features, in_features], got {}", weight.shape());
  SG_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1),
           "fused_linear: input of shape {} needs a last dim of {} (the weight is {})", x.shape(),
           weight.size(1), weight.shape());
  if (bias.defined()) {
    SG_CHECK(bias.dim() == 1 && bias.size(0) == weight.size(0),
             "fused_linear: bias must be [{}] for a weight of shape {}, got {}", weight.size(0),
             weight.shape(), bias.shape());
  }
  const bool same_dtype =
      weight.dtype() == x.dtype() && (!bias.defined() || bias.dtype() == x.dtype());
  SG_CHECK(same_dtype,
           "fused_linear: input, weight and bias must have one dtype, got {}, {} and {}", x.dtype(),
           weight.dtype(), bias.defined() ? dtype_name(bias.dtype()) : "none");
  detail::check_same_device("fused_linear", {x, weight, bias});
}

}  // namespace

Tensor fused_linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  SG_PROFILE_OP("fused_linear");
  check_linear(x, weight, bias);
  if (!bias.defined()) return matmul(x, weight.t());  // nothing to fuse

  const int64_t in = weight.size(1), out_features = weight.size(0);
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  const int64_t n_rows = numel_of(out_shape);  // every dim of x but the last, flattened
  out_shape.push_back(out_features);
  Tensor out = empty(out_shape, x.options());
  Backend& backend = backend_for(x.device());
  const Tensor x_rows = x.detach().reshape({n_rows, in});  // a view unless x's rows are scattered
  const Tensor out_rows = out.view({n_rows, out_features});
  if (!backend.linear(x_rows, weight.detach(), bias.detach(), out_rows)) {
    // Every row of the output starts as the bias...
    backend.copy(detail::broadcast_view(bias.detach(), out_shape), out);
    // ...and the product x·Wᵀ is added onto it: one gemm over all rows, [1, rows, in]·[1, in, out].
    backend.gemm(x_rows.unsqueeze(0), weight.detach().t().unsqueeze(0), out_rows.unsqueeze(0),
                 /*accumulate=*/true);
  }

  const bool need_dx = x.requires_grad(), need_dw = weight.requires_grad();
  return record("fused_linear", out, {x, weight, bias},
                [saved_x = need_dw ? SavedTensor(x) : SavedTensor(),
                 saved_w = need_dx ? SavedTensor(weight) : SavedTensor(), need_dx, need_dw,
                 need_db = bias.requires_grad(), n_rows, in, out_features,
                 x_shape = x.shape()](const Tensor& g) {
                  const Tensor g_rows = g.reshape({n_rows, out_features});
                  const Tensor x_ = need_dw ? saved_x.get().reshape({n_rows, in}) : Tensor();
                  const Tensor w_ = need_dx ? saved_w.get() : Tensor();
                  Tensor dx = need_dx ? empty({n_rows, in}, g.options()) : Tensor();
                  Tensor dw = need_dw ? empty({out_features, in}, g.options()) : Tensor();
                  Tensor db = need_db ? empty({out_features}, g.options()) : Tensor();
                  // With create_graph (grad mode on) the composition below is the backward, as
                  // recorded ops on the saved x and W, so the gradient differentiates again.
                  if (is_grad_enabled() ||
                      !backend_for(g.device()).linear_backward(g_rows, x_, w_, dx, dw, db)) {
                    dx = dw = db = Tensor();  // not held while the composition makes its own
                    if (need_dx) dx = matmul(g_rows, w_);      // [rows, in]
                    if (need_dw) dw = matmul(g_rows.t(), x_);  // [out, in]
                    if (need_db) db = g_rows.sum({0});         // [out]
                  }
                  return Grads{need_dx ? dx.view(x_shape) : Tensor(), dw, db};
                });
}

}  // namespace sg
