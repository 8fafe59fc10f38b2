// In-place ops: they write into the tensor's own storage and bump its version counter (Note
// [Version counter] in autograd/node.h). They exist for optimizers and initialisers, so they are
// not differentiable: while grad mode is on they refuse tensors that require grad.
#include <cmath>

#include "autograd/backend/adam_step_scalars.h"
#include "autograd/grad_mode.h"
#include "autograd/ops/internal.h"

namespace sg {

namespace {

void check_inplace(std::string_view op, const Tensor& self, const Tensor& other = Tensor()) {
  SG_CHECK(self.defined(), "{}: called on an undefined tensor", op);
  bool graph =
      is_grad_enabled() && (self.requires_grad() || (other.defined() && other.requires_grad()));
  SG_CHECK(!graph,
           "{}: cannot change a tensor of shape {} in place while it (or the operand) requires "
           "grad and grad mode is on; wrap the update in sg::NoGradGuard (as optimizers do)",
           op, self.shape());
  SG_CHECK(!elements_may_overlap(self.shape(), self.strides()),
           "{}: the tensor of shape {} and strides {} has elements that share memory (an "
           "expanded or overlapping view), so an in-place write would land on some of them more "
           "than once; write into a copy (.contiguous() or .clone())",
           op, self.shape(), self.strides());
  if (other.defined()) {
    detail::check_same_device(op, {self, other});
    SG_CHECK(broadcast_shapes(op, other.shape(), self.shape()) == self.shape(),
             "{}: an operand of shape {} cannot be broadcast to the tensor's shape {}", op,
             other.shape(), self.shape());
  }
}

// other, converted to self's dtype and viewed at self's shape (copied first if it overlaps self,
// so the kernel never reads what it has just written).
Tensor operand_for(const Tensor& self, const Tensor& other) {
  Tensor o = other.shares_storage(self) && !other.is_same(self) ? other.clone() : other;
  return detail::broadcast_view(detail::convert(o, self.dtype()), self.shape());
}

Tensor& binary_inplace(std::string_view op, BinaryOp kind, Tensor& self, const Tensor& other) {
  check_inplace(op, self, other);
  // As PyTorch's can_cast: a float result is not cut into an integer tensor, nor a number into a
  // bool one (float64 into float32 is a rounding, as any float result is).
  const DType result = promote_types(self.dtype(), other.dtype());
  SG_CHECK(!(is_floating(result) && !self.is_floating_point()) &&
               !(self.dtype() == kBool && result != kBool),
           "{}: the result of {} tensor and {} operand is {}, which the {} tensor cannot hold; "
           "convert it first (.to(...))",
           op, dtype_with_article(self.dtype()), dtype_with_article(other.dtype()), result,
           self.dtype());
  detail::check_not_bfloat16(op, {self, other});
  backend_for(self.device()).binary(kind, self, operand_for(self, other), self);
  self.impl()->storage->bump_version();
  return self;
}

}  // namespace

Tensor& Tensor::zero_() {
  SG_PROFILE_OP("zero_");
  return fill_(0.0);
}

Tensor& Tensor::fill_(double value) {
  SG_PROFILE_OP("fill_");
  check_inplace("fill_", *this);
  backend_for(device()).fill(*this, value);
  impl()->storage->bump_version();
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  SG_PROFILE_OP("copy_");
  check_inplace("copy_", *this, src);
  Tensor s = src.shares_storage(*this) ? src.clone() : src;
  backend_for(device()).copy(detail::broadcast_view(s, shape()), *this);
  impl()->storage->bump_version();
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  SG_PROFILE_OP("add_");
  if (alpha == 1.0) return binary_inplace("add_", BinaryOp::Add, *this, other);
  // Checked before the guard below, which would hide grad mode from the check (add_(x, 2.0) on a
  // tensor that requires grad was accepted and left out of the graph: a wrong gradient).
  check_inplace("add_", *this, other);
  NoGradGuard no_grad;
  return binary_inplace("add_", BinaryOp::Add, *this, other * alpha);
}
Tensor& Tensor::add_(double other) {
  SG_PROFILE_OP("add_");
  return add_(scalar_like(*this, other));
}
Tensor& Tensor::sub_(const Tensor& other, double alpha) {
  SG_PROFILE_OP("sub_");
  return add_(other, -alpha);
}
Tensor& Tensor::mul_(const Tensor& other) {
  SG_PROFILE_OP("mul_");
  return binary_inplace("mul_", BinaryOp::Mul, *this, other);
}
Tensor& Tensor::mul_(double other) {
  SG_PROFILE_OP("mul_");
  return mul_(scalar_like(*this, other));
}
Tensor& Tensor::div_(const Tensor& other) {
  SG_PROFILE_OP("div_");
  SG_CHECK(is_floating(dtype()), "div_: true division needs a float tensor, got {}", dtype());
  return binary_inplace("div_", BinaryOp::Div, *this, other);
}
Tensor& Tensor::div_(double other) {
  SG_PROFILE_OP("div_");
  return div_(scalar_like(*this, other));
}

Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, double value) {
  SG_PROFILE_OP("addcmul_");
  check_inplace("addcmul_", *this, a);
  check_inplace("addcmul_", *this, b);
  detail::check_not_bfloat16("addcmul_", {*this, a, b});
  NoGradGuard no_grad;
  return add_(a * b, value);
}

Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, double value) {
  SG_PROFILE_OP("addcdiv_");
  check_inplace("addcdiv_", *this, a);
  check_inplace("addcdiv_", *this, b);
  detail::check_not_bfloat16("addcdiv_", {*this, a, b});
  NoGradGuard no_grad;
  return add_(a / b, value);
}

Tensor& Tensor::uniform_(double low, double high) {
  SG_PROFILE_OP("uniform_");
  SG_CHECK(is_floating(dtype()), "uniform_: draws real numbers, not {} values", dtype());
  SG_CHECK(low <= high, "uniform_: low {} must not exceed high {}", low, high);
  check_inplace("uniform_", *this);  // before the guard, which hides grad mode (nn::init wraps)
  NoGradGuard no_grad;
  // Scaled in place: one float64 temporary beside the tensor, not three.
  Tensor values = rand(shape(), TensorOptions(kFloat64).device(device()));
  return copy_(values.mul_(high - low).add_(low));
}

Tensor& Tensor::normal_(double mean, double std) {
  SG_PROFILE_OP("normal_");
  SG_CHECK(is_floating(dtype()), "normal_: draws real numbers, not {} values", dtype());
  SG_CHECK(std >= 0, "normal_: std must be non-negative, got {}", std);
  check_inplace("normal_", *this);  // before the guard, which hides grad mode (nn::init wraps)
  NoGradGuard no_grad;
  Tensor values = randn(shape(), TensorOptions(kFloat64).device(device()));
  return copy_(values.mul_(std).add_(mean));
}

// ---- adam_update_ ----
// One step of Adam (AdamW with decoupled_weight_decay) on param, in place, with its two moment
// buffers (torch.optim.Adam's rule; nn/optim/adam.h has the formulas). A backend with the fused
// kernel makes one pass over the four tensors; others run the same arithmetic as ops.
namespace {

void check_adam_arguments(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                          const Tensor& exp_avg_sq, const char* op = "adam_update_") {
  Tensor p = param;
  check_inplace(op, p, grad);
  detail::check_not_bfloat16(op, {param, grad, exp_avg, exp_avg_sq});
  for (const Tensor* t : {&grad, &exp_avg, &exp_avg_sq}) {
    SG_CHECK(t->shape() == param.shape() && t->dtype() == param.dtype(),
             "{}: gradient and moments must be {} of shape {}, got {} of shape {}", op,
             param.dtype(), param.shape(), t->dtype(), t->shape());
  }
  detail::check_same_device(op, {param, grad, exp_avg, exp_avg_sq});
}

void check_step_scalars(const Tensor& param, const Tensor& step_scalars, std::string_view op) {
  SG_CHECK(step_scalars.dtype() == kFloat64 && step_scalars.shape() == Shape{3} &&
               step_scalars.is_contiguous(),
           "{}: step_scalars must be a contiguous float64 tensor of shape [3] "
           "(AdamStepScalars), got {} of shape {}",
           op, step_scalars.dtype(), step_scalars.shape());
  detail::check_same_device(op, {param, step_scalars});
}

bool contiguous_state(const Tensor& param, const Tensor& exp_avg, const Tensor& exp_avg_sq) {
  return param.is_contiguous() && exp_avg.is_contiguous() && exp_avg_sq.is_contiguous();
}

// The update as ops, from the step's scalars: what backends without the fused kernel run, and
// AMSGrad (max_exp_avg_sq defined) everywhere. Adam's arithmetic is written here once.
void composed_adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                          const Tensor& exp_avg_sq, const AdamStepScalars& s, double beta1,
                          double beta2, double eps, double weight_decay,
                          bool decoupled_weight_decay, const Tensor& max_exp_avg_sq = Tensor()) {
  NoGradGuard no_grad;
  Tensor p = param, g = grad, m = exp_avg, v = exp_avg_sq;
  if (weight_decay != 0.0) {
    if (decoupled_weight_decay) {
      p.mul_(s.decay);
    } else {
      g = g + p * weight_decay;  // a new tensor: the stored gradient stays as is
    }
  }
  m.mul_(beta1).add_(g, 1.0 - beta1);
  v.mul_(beta2).addcmul_(g, g, 1.0 - beta2);
  Tensor second_moment = v;
  if (max_exp_avg_sq.defined()) {  // AMSGrad: the largest second moment so far
    Tensor v_max = max_exp_avg_sq;
    v_max.copy_(maximum(v_max, v));
    second_moment = v_max;
  }
  // PyTorch's order of operations, so results agree to the last bits that rounding allows.
  Tensor denom = second_moment.sqrt() / s.sqrt_bias_correction2;
  denom.add_(eps);
  p.addcdiv_(m, denom, s.step_size);
}

void bump_versions(const Tensor& param, const Tensor& exp_avg, const Tensor& exp_avg_sq) {
  for (const Tensor* t : {&param, &exp_avg, &exp_avg_sq}) t->impl()->storage->bump_version();
}

}  // namespace

void adam_update_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                  const Tensor& exp_avg_sq, double lr, double beta1, double beta2, double eps,
                  double weight_decay, bool decoupled_weight_decay, int64_t step,
                  const Tensor& max_exp_avg_sq, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("adam_update_");
  check_adam_arguments(param, grad, exp_avg, exp_avg_sq);
  if (max_exp_avg_sq.defined()) check_adam_arguments(param, grad, exp_avg, max_exp_avg_sq);
  SG_CHECK(step >= 1, "adam_update_: step counts from 1, got {}", step);
  // AMSGrad has no fused kernel: it always takes the composed update.
  const bool fused = !max_exp_avg_sq.defined() && contiguous_state(param, exp_avg, exp_avg_sq) &&
                     backend_for(param.device())
                         .adam_update(param, grad.contiguous(), exp_avg, exp_avg_sq, lr, beta1,
                                      beta2, eps, weight_decay, decoupled_weight_decay, step);
  if (!fused) {
    composed_adam_update(param, grad, exp_avg, exp_avg_sq,
                         adam_step_scalars(lr, beta1, beta2, weight_decay, step), beta1, beta2, eps,
                         weight_decay, decoupled_weight_decay, max_exp_avg_sq);
  }
  if (max_exp_avg_sq.defined()) max_exp_avg_sq.impl()->storage->bump_version();
  bump_versions(param, exp_avg, exp_avg_sq);
}

void adam_update_foreach_(const std::vector<AdamParameter>& parameters, double lr, double beta1,
                          double beta2, double eps, double weight_decay,
                          bool decoupled_weight_decay, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("adam_update_foreach_");
  if (parameters.empty()) return;
  const Device device = parameters.front().param.device();
  const bool from_device = parameters.front().step_scalars.defined();
  std::vector<Backend::AdamTensors> fused;  // the parameters whose state is contiguous
  for (const AdamParameter& a : parameters) {
    check_adam_arguments(a.param, a.grad, a.exp_avg, a.exp_avg_sq, "adam_update_foreach_");
    SG_CHECK(a.param.device() == device,
             "adam_update_foreach_: every parameter must be on one device, got {} and {}", device,
             a.param.device());
    SG_CHECK(a.step_scalars.defined() == from_device,
             "adam_update_foreach_: step_scalars must be given for every parameter or for none");
    if (from_device) {
      check_step_scalars(a.param, a.step_scalars, "adam_update_foreach_");
    } else {
      SG_CHECK(a.step >= 1, "adam_update_foreach_: step counts from 1, got {}", a.step);
    }
    if (contiguous_state(a.param, a.exp_avg, a.exp_avg_sq)) {
      fused.push_back({a.param, a.grad.contiguous(), a.exp_avg, a.exp_avg_sq,
                       from_device ? AdamStepScalars{}
                                   : adam_step_scalars(lr, beta1, beta2, weight_decay, a.step),
                       a.step_scalars});
    }
  }
  const bool fused_done =
      !fused.empty() && backend_for(device).adam_update_foreach(
                            fused, beta1, beta2, eps, weight_decay, decoupled_weight_decay);
  if (fused_done) {
    for (const Backend::AdamTensors& t : fused) bump_versions(t.param, t.exp_avg, t.exp_avg_sq);
  }
  // What the kernel did not take, one parameter at a time: the same arithmetic, the same bits.
  for (const AdamParameter& a : parameters) {
    if (fused_done && contiguous_state(a.param, a.exp_avg, a.exp_avg_sq)) continue;
    if (from_device) {
      adam_update_(a.param, a.grad, a.exp_avg, a.exp_avg_sq, a.step_scalars, beta1, beta2, eps,
                   weight_decay, decoupled_weight_decay);
    } else {
      adam_update_(a.param, a.grad, a.exp_avg, a.exp_avg_sq, lr, beta1, beta2, eps, weight_decay,
                   decoupled_weight_decay, a.step);
    }
  }
}

void adam_update_(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                  const Tensor& exp_avg_sq, const Tensor& step_scalars, double beta1, double beta2,
                  double eps, double weight_decay, bool decoupled_weight_decay, CallSite site) {
  const CallSiteScope call_site(site);
  SG_PROFILE_OP("adam_update_");
  check_adam_arguments(param, grad, exp_avg, exp_avg_sq);
  check_step_scalars(param, step_scalars, "adam_update_");
  if (!contiguous_state(param, exp_avg, exp_avg_sq) ||
      !backend_for(param.device())
           .adam_update_from_device(param, grad.contiguous(), exp_avg, exp_avg_sq, step_scalars,
                                    beta1, beta2, eps, weight_decay, decoupled_weight_decay)) {
    // Backends without the kernel read the three numbers (a wait for the device; inside a CUDA
    // graph capture that is refused with a clear error).
    const std::vector<double> s = step_scalars.to_vector<double>();
    composed_adam_update(param, grad, exp_avg, exp_avg_sq, {s[0], s[1], s[2]}, beta1, beta2, eps,
                         weight_decay, decoupled_weight_decay);
  }
  bump_versions(param, exp_avg, exp_avg_sq);
}

}  // namespace sg
