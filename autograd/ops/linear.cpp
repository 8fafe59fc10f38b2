// fused_linear: y = x·Wᵀ + b as one op (torch.nn.functional.linear), the layer every Transformer
// block runs six to ten times, and linear_composed, the same math from matmul and add: the version
// to read first, and the one that runs where the backend has no Linear kernel (the reference CPU
// backend, CUDA). A backend's kernel (Backend::linear and linear_backward; the fast CPU backend's
// in backend/cpu_fast/linear.cpp) does the whole layer, forward or backward, in one job; the op
// then records one node whose backward is the backend's too:
//   dx = g·W  [rows, in],   dW = gᵀ·x  [out, in],   db = Σ_rows g  [out]
// (x [rows, in] with its batch dims flattened, W [out, in], g = dL/dy [rows, out]).
// Under autocast (autograd/autocast.h), where the layer is large enough, the product reads x and W
// rounded to bfloat16 and is summed onto the float32 bias (gemm_bfloat16 with accumulate); its
// backward products are bfloat16 ones too (matmul under the recorded autocast state), db stays a
// float32 sum.
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

Tensor linear_composed(const Tensor& x, const Tensor& weight, const Tensor& bias, CallSite site) {
  const CallSiteScope call_site(site);
  detail::check_not_bfloat16("linear_composed", {x, weight, bias});
  // x Wᵀ: the transposed weight is a view, and BLAS reads it without a copy.
  Tensor y = matmul(x, weight.t());
  return bias.defined() ? y + bias : y;
}

Tensor fused_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("fused_linear");
  check_linear(x, weight, bias);
  if (!bias.defined()) return linear_composed(x, weight, bias);  // one product: nothing to fuse

  const int64_t in = weight.size(1), out_features = weight.size(0);
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  const int64_t n_rows = numel_of(out_shape);  // every dim of x but the last, flattened
  out_shape.push_back(out_features);
  Tensor out = empty(out_shape, x.options());
  Backend& backend = backend_for(x.device());
  const Tensor x_rows = x.detach().reshape({n_rows, in});  // a view unless x's rows are scattered
  const Tensor out_rows = out.view({n_rows, out_features});
  const bool bfloat16 = autocast_applies(
      x.dtype(), x.device(), static_cast<double>(n_rows) * static_cast<double>(in * out_features));
  if (bfloat16) {  // out = bias, then out += x·Wᵀ, as [1, rows, ..] matrices
    auto matrix = [](const Tensor& m, int64_t rows_dim, int64_t cols_dim) {
      return detail::make_view(m, {1, m.size(rows_dim), m.size(cols_dim)},
                               {0, m.stride(rows_dim), m.stride(cols_dim)}, m.storage_offset());
    };
    backend.copy(detail::broadcast_view(bias.detach(), out_rows.shape()), out_rows);
    backend.gemm_bfloat16(matrix(x_rows, 0, 1), matrix(weight.detach(), 1, 0),  // x, Wᵀ
                          matrix(out_rows, 0, 1), /*accumulate=*/true);
  } else if (!backend.linear(x_rows, weight.detach(), bias.detach(), out_rows)) {
    return linear_composed(x, weight, bias);
  }
  const double product_flops = 2.0 * static_cast<double>(n_rows * in * out_features);
  profiler::count_flops(product_flops);

  const bool need_dx = x.requires_grad(), need_dw = weight.requires_grad();
  return record(
      "fused_linear", out, {x, weight, bias},
      [saved_x = need_dw ? SavedTensor(x) : SavedTensor(),
       saved_w = need_dx ? SavedTensor(weight) : SavedTensor(), need_dx, need_dw,
       need_db = bias.requires_grad(), n_rows, in, out_features, product_flops, x_shape = x.shape(),
       bfloat16](const Tensor& g) {
        const Tensor g_rows = g.reshape({n_rows, out_features});
        const Tensor x_ = need_dw ? saved_x.get().reshape({n_rows, in}) : Tensor();
        const Tensor w_ = need_dx ? saved_w.get() : Tensor();
        if (is_grad_enabled() || bfloat16) {
          // create_graph, or autocast: the same three products as ops (recorded, on the saved x
          // and W, so the gradient differentiates again; bfloat16 ones as the forward's were).
          const AutocastAsRecorded autocast(bfloat16);
          return Grads{need_dx ? matmul(g_rows, w_).view(x_shape) : Tensor(),
                       need_dw ? matmul(g_rows.t(), x_) : Tensor(),
                       need_db ? g_rows.sum(0) : Tensor()};
        }
        Tensor dx = need_dx ? empty({n_rows, in}, g.options()) : Tensor();
        Tensor dw = need_dw ? empty({out_features, in}, g.options()) : Tensor();
        Tensor db = need_db ? empty({out_features}, g.options()) : Tensor();
        const bool done = backend_for(g.device()).linear_backward(g_rows, x_, w_, dx, dw, db);
        SG_CHECK(done, "fused_linear: the backend ran the forward but not the backward");
        profiler::count_flops(product_flops * ((need_dx ? 1.0 : 0.0) + (need_dw ? 1.0 : 0.0)));
        return Grads{need_dx ? dx.view(x_shape) : Tensor(), dw, db};
      });
}

}  // namespace sg
