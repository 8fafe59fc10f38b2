// Tensor: metadata, autograd state, data access and conversions. The methods that are ops (view,
// exp, sum, matmul, ...) and the operators forward to autograd/ops/*.cpp from tensor_methods.cpp.
#include "autograd/tensor.h"

#include <ostream>

#include "autograd/backend/backend.h"
#include "autograd/engine.h"
#include "autograd/factory.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace sg {

namespace {
const TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  SG_CHECK(impl != nullptr, "tensor: this tensor is undefined (default-constructed)");
  return *impl;
}
}  // namespace

// ---- metadata ----

const Shape& Tensor::shape() const { return checked(impl_).shape; }
const Strides& Tensor::strides() const { return checked(impl_).strides; }
int64_t Tensor::storage_offset() const { return checked(impl_).offset; }
DType Tensor::dtype() const { return checked(impl_).dtype; }
Device Tensor::device() const { return checked(impl_).storage->device(); }
int64_t Tensor::version() const { return checked(impl_).storage->version(); }

int64_t Tensor::size(int64_t dim) const { return shape()[normalize_dim("size", dim, this->dim())]; }
int64_t Tensor::stride(int64_t dim) const {
  return strides()[normalize_dim("stride", dim, this->dim())];
}

bool Tensor::is_contiguous() const {
  // --8<-- [start:ex01.is_contiguous]
  // Size-1 dims may carry any stride; only dims that are stepped along must match.
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (shape()[d] == 1) continue;
    if (strides()[d] != expected) return false;
    expected *= shape()[d];
  }
  return true;
  // --8<-- [end:ex01.is_contiguous]
}

bool Tensor::shares_storage(const Tensor& other) const {
  return defined() && other.defined() && impl_->storage == other.impl_->storage;
}

// ---- autograd ----

bool Tensor::requires_grad() const { return checked(impl_).requires_grad; }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  checked(impl_);
  SG_CHECK(is_leaf(),
           "requires_grad_: only leaf tensors can change requires_grad; this one was computed by "
           "'{}' (use detach() to get a leaf)",
           impl_->grad_fn->name());
  SG_CHECK(!requires_grad || is_floating(dtype()),
           "requires_grad_: only floating point tensors (float32, float64, bfloat16) can require "
           "grad, got {}",
           dtype());
  impl_->requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const { return checked(impl_).grad_fn == nullptr; }

Tensor Tensor::grad() const { return Tensor(checked(impl_).grad); }

void Tensor::set_grad(const Tensor& grad) {
  checked(impl_);
  if (grad.defined()) {
    SG_CHECK(grad.shape() == shape() && grad.dtype() == dtype(),
             "set_grad: gradient {} {} does not match the tensor {} {}", grad.shape(), grad.dtype(),
             shape(), dtype());
  }
  impl_->grad = grad.impl_ptr();
}

const std::shared_ptr<Node>& Tensor::grad_fn() const { return checked(impl_).grad_fn; }

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  run_backward({*this}, {gradient}, retain_graph.value_or(create_graph), create_graph);
}

Tensor Tensor::detach() const {
  const TensorImpl& self = checked(impl_);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = self.storage;
  impl->shape = self.shape;
  impl->strides = self.strides;
  impl->offset = self.offset;
  impl->dtype = self.dtype;
  return Tensor(std::move(impl));
}

void Tensor::set_data(const Tensor& src) {
  checked(impl_);
  SG_CHECK(src.defined(), "set_data: the source tensor is undefined");
  SG_CHECK(is_leaf(),
           "set_data: only leaf tensors can take new data; this one was computed by '{}'",
           impl_->grad_fn ? impl_->grad_fn->name() : "");
  SG_CHECK(!requires_grad() || is_floating(src.dtype()),
           "set_data: a tensor that requires grad needs float data, got {}", src.dtype());
  impl_->storage = src.impl()->storage;
  impl_->shape = src.shape();
  impl_->strides = src.strides();
  impl_->offset = src.storage_offset();
  impl_->dtype = src.dtype();
  impl_->grad.reset();
}

// ---- data access ----

void* Tensor::raw_data() const {
  const TensorImpl& self = checked(impl_);
  return static_cast<char*>(self.storage->data()) +
         self.offset * static_cast<int64_t>(dtype_size(self.dtype));
}

template <typename T>
T* Tensor::data_ptr() const {
  SG_CHECK(dtype() == dtype_of<T>::value, "data_ptr: the tensor is {} but {} was asked for",
           dtype(), dtype_of<T>::value);
  return static_cast<T*>(raw_data());
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  NoGradGuard no_grad;
  Tensor host = to(kCPU).contiguous();
  std::vector<T> out(static_cast<size_t>(host.numel()));
  dispatch_dtype_and_bfloat16("to_vector", host.dtype(), [&]<typename S>() {
    const S* p = host.data_ptr<S>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(p[i]);
  });
  return out;
}

template <typename T>
T Tensor::item() const {
  SG_CHECK(numel() == 1, "item: the tensor has {} elements (shape {}); item() needs exactly one",
           numel(), shape());
  return to_vector<T>()[0];
}

template <typename T>
T Tensor::at(const std::vector<int64_t>& index) const {
  SG_CHECK(static_cast<int64_t>(index.size()) == dim(),
           "at: {} indices given for a tensor of shape {}", index.size(), shape());
  Tensor element = detach();
  for (int64_t d = dim() - 1; d >= 0; --d) element = element.select(d, index[d]);
  return element.item<T>();
}

#define SG_INSTANTIATE_ACCESS(T)                        \
  template T* Tensor::data_ptr<T>() const;              \
  template std::vector<T> Tensor::to_vector<T>() const; \
  template T Tensor::item<T>() const;                   \
  template T Tensor::at<T>(const std::vector<int64_t>&) const;
SG_INSTANTIATE_ACCESS(bool)
SG_INSTANTIATE_ACCESS(int64_t)
SG_INSTANTIATE_ACCESS(float)
SG_INSTANTIATE_ACCESS(double)
SG_INSTANTIATE_ACCESS(BFloat16)
#undef SG_INSTANTIATE_ACCESS

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// ---- conversions ----

Tensor Tensor::to(DType dtype, CallSite site) const {
  const CallSiteScope call_site(site);
  return to_dtype(*this, dtype);
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  Tensor src = detach().contiguous();
  Tensor dst = empty(shape(), TensorOptions(dtype()).device(device));
  size_t nbytes = static_cast<size_t>(numel()) * dtype_size(dtype());
  if (src.device().is_cpu()) {
    backend_for(device).copy_from_host(dst.raw_data(), src.raw_data(), nbytes);
  } else if (device.is_cpu()) {
    backend_for(src.device()).copy_to_host(dst.raw_data(), src.raw_data(), nbytes);
  } else {
    std::vector<char> staging(nbytes);
    backend_for(src.device()).copy_to_host(staging.data(), src.raw_data(), nbytes);
    backend_for(device).copy_from_host(dst.raw_data(), staging.data(), nbytes);
  }
  // Differentiable, as in PyTorch: the gradient goes back to the device the tensor came from.
  return record("to", dst, {*this},
                [source = this->device()](const Tensor& g) { return Grads{g.to(source)}; });
}

Tensor Tensor::contiguous(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::contiguous(*this);
}

Tensor Tensor::clone() const {
  // clone = a contiguous copy that stays in the graph (its gradient passes straight through).
  Tensor out = empty(shape(), options());
  backend_for(device()).copy(*this, out);
  return record("clone", out, {*this}, [](const Tensor& g) { return Grads{g}; });
}

}  // namespace sg
