// In-place ops: they write into the tensor's own storage and bump its version counter (Note
// [Version counter] in autograd/node.h). They exist for optimizers and initialisers, so they are
// not differentiable: while grad mode is on they refuse tensors that require grad.
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
  backend_for(self.device()).binary(kind, self, operand_for(self, other), self);
  self.impl()->storage->bump_version();
  return self;
}

}  // namespace

Tensor& Tensor::zero_() { return fill_(0.0); }

Tensor& Tensor::fill_(double value) {
  check_inplace("fill_", *this);
  backend_for(device()).fill(*this, value);
  impl()->storage->bump_version();
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_inplace("copy_", *this, src);
  Tensor s = src.shares_storage(*this) ? src.clone() : src;
  backend_for(device()).copy(detail::broadcast_view(s, shape()), *this);
  impl()->storage->bump_version();
  return *this;
}

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  if (alpha == 1.0) return binary_inplace("add_", BinaryOp::Add, *this, other);
  NoGradGuard no_grad;
  return binary_inplace("add_", BinaryOp::Add, *this, other * alpha);
}
Tensor& Tensor::add_(double other) { return add_(scalar_like(*this, other)); }
Tensor& Tensor::sub_(const Tensor& other, double alpha) { return add_(other, -alpha); }
Tensor& Tensor::mul_(const Tensor& other) {
  return binary_inplace("mul_", BinaryOp::Mul, *this, other);
}
Tensor& Tensor::mul_(double other) { return mul_(scalar_like(*this, other)); }
Tensor& Tensor::div_(const Tensor& other) {
  SG_CHECK(is_floating(dtype()), "div_: true division needs a float tensor, got {}", dtype());
  return binary_inplace("div_", BinaryOp::Div, *this, other);
}
Tensor& Tensor::div_(double other) { return div_(scalar_like(*this, other)); }

Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, double value) {
  check_inplace("addcmul_", *this, a);
  check_inplace("addcmul_", *this, b);
  NoGradGuard no_grad;
  return add_(a * b, value);
}

Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, double value) {
  check_inplace("addcdiv_", *this, a);
  check_inplace("addcdiv_", *this, b);
  NoGradGuard no_grad;
  return add_(a / b, value);
}

Tensor& Tensor::uniform_(double low, double high) {
  SG_CHECK(low <= high, "uniform_: low {} must not exceed high {}", low, high);
  NoGradGuard no_grad;
  return copy_(rand(shape(), TensorOptions(kFloat64)) * (high - low) + low);
}

Tensor& Tensor::normal_(double mean, double std) {
  SG_CHECK(std >= 0, "normal_: std must be non-negative, got {}", std);
  NoGradGuard no_grad;
  return copy_(randn(shape(), TensorOptions(kFloat64)) * std + mean);
}

}  // namespace sg
