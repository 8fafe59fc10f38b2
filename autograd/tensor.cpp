// Tensor: metadata, autograd state and data access. The ops behind the methods live in
// autograd/ops/*.cpp; the methods here only forward to them.
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
           "requires_grad_: only float32 and float64 tensors can require grad, got {}", dtype());
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
  dispatch_dtype("to_vector", host.dtype(), [&]<typename S>() {
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

// ---- method forwarding ----

Tensor Tensor::view(const Shape& s, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::view(*this, s);
}
Tensor Tensor::reshape(const Shape& s, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::reshape(*this, s);
}
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim, CallSite site) const {
  const CallSiteScope call_site(site);
  if (dim() == 0) return reshape({1});
  int64_t s = normalize_dim("flatten", start_dim, dim());
  int64_t e = normalize_dim("flatten", end_dim, dim());
  SG_CHECK(s <= e, "flatten: start_dim {} comes after end_dim {}", start_dim, end_dim);
  Shape out(shape().begin(), shape().begin() + s);
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= shape()[d];
  out.push_back(merged);
  out.insert(out.end(), shape().begin() + e + 1, shape().end());
  return reshape(out);
}
Tensor Tensor::transpose(int64_t d0, int64_t d1, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::transpose(*this, d0, d1);
}
Tensor Tensor::t(CallSite site) const {
  const CallSiteScope call_site(site);
  SG_CHECK(dim() <= 2, "t: expects a tensor with <= 2 dims, got shape {}", shape());
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::permute(const std::vector<int64_t>& dims, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::permute(*this, dims);
}
Tensor Tensor::unsqueeze(int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::unsqueeze(*this, d);
}
Tensor Tensor::squeeze(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::squeeze(*this);
}
Tensor Tensor::squeeze(int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::squeeze(*this, d);
}
Tensor Tensor::expand(const Shape& s, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::expand(*this, s);
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::narrow(*this, d, start, length);
}
Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::slice(*this, d, start, end, step);
}
Tensor Tensor::select(int64_t d, int64_t index, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::select(*this, d, index);
}

Tensor Tensor::neg(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::neg(*this);
}
Tensor Tensor::exp(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::exp(*this);
}
Tensor Tensor::log(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::log(*this);
}
Tensor Tensor::sqrt(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::sqrt(*this);
}
Tensor Tensor::rsqrt(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::rsqrt(*this);
}
Tensor Tensor::abs(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::abs(*this);
}
Tensor Tensor::tanh(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::tanh(*this);
}
Tensor Tensor::sigmoid(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::sigmoid(*this);
}
Tensor Tensor::relu(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::relu(*this);
}
Tensor Tensor::pow(double e, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::pow(*this, e);
}
Tensor Tensor::pow(const Tensor& e, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::pow(*this, e);
}
Tensor Tensor::clamp(std::optional<double> lo, std::optional<double> hi, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::clamp(*this, lo, hi);
}
Tensor Tensor::logical_not(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::logical_not(*this);
}
Tensor Tensor::eq(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::eq(*this, o);
}
Tensor Tensor::ne(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::ne(*this, o);
}
Tensor Tensor::lt(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::lt(*this, o);
}
Tensor Tensor::le(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::le(*this, o);
}
Tensor Tensor::gt(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::gt(*this, o);
}
Tensor Tensor::ge(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::ge(*this, o);
}
Tensor Tensor::eq(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::eq(*this, scalar_like(*this, o));
}
Tensor Tensor::ne(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::ne(*this, scalar_like(*this, o));
}
Tensor Tensor::lt(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::lt(*this, scalar_like(*this, o));
}
Tensor Tensor::le(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::le(*this, scalar_like(*this, o));
}
Tensor Tensor::gt(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::gt(*this, scalar_like(*this, o));
}
Tensor Tensor::ge(double o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::ge(*this, scalar_like(*this, o));
}

Tensor Tensor::sum(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::sum(*this);
}
Tensor Tensor::sum(const Dims& dims, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::sum(*this, dims, keepdim);
}
Tensor Tensor::mean(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::mean(*this);
}
Tensor Tensor::mean(const Dims& dims, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::mean(*this, dims, keepdim);
}
Tensor Tensor::var(const Dims& dims, int64_t correction, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::var(*this, dims, correction, keepdim);
}
Tensor Tensor::amax(const Dims& dims, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::amax(*this, dims, keepdim);
}
Tensor Tensor::amin(const Dims& dims, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::amin(*this, dims, keepdim);
}
Tensor Tensor::max(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::amax(*this);
}
std::pair<Tensor, Tensor> Tensor::max(int64_t d, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::max(*this, d, keepdim);
}
Tensor Tensor::min(CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::amin(*this);
}
std::pair<Tensor, Tensor> Tensor::min(int64_t d, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::min(*this, d, keepdim);
}
Tensor Tensor::argmax(int64_t d, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::argmax(*this, d, keepdim);
}
Tensor Tensor::argmin(int64_t d, bool keepdim, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::argmin(*this, d, keepdim);
}

Tensor Tensor::matmul(const Tensor& o, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::matmul(*this, o);
}
Tensor Tensor::softmax(int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::softmax(*this, d);
}
Tensor Tensor::log_softmax(int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::log_softmax(*this, d);
}
Tensor Tensor::masked_fill(const Tensor& mask, double value, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::masked_fill(*this, mask, value);
}
Tensor Tensor::index_select(int64_t d, const Tensor& index, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::index_select(*this, d, index);
}
Tensor Tensor::gather(int64_t d, const Tensor& index, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::gather(*this, d, index);
}
Tensor Tensor::tril(int64_t diagonal, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::tril(*this, diagonal);
}
Tensor Tensor::triu(int64_t diagonal, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::triu(*this, diagonal);
}
std::vector<Tensor> Tensor::split(int64_t size, int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::split(*this, size, d);
}
std::vector<Tensor> Tensor::chunk(int64_t n, int64_t d, CallSite site) const {
  const CallSiteScope call_site(site);
  return sg::chunk(*this, n, d);
}

// ---- operators ----

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b, 1.0, CallSite::unknown()); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b, 1.0, CallSite::unknown()); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b, CallSite::unknown()); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b, CallSite::unknown()); }
Tensor operator+(const Tensor& a, double b) {
  return add(a, scalar_like(a, b), 1.0, CallSite::unknown());
}
Tensor operator-(const Tensor& a, double b) {
  return sub(a, scalar_like(a, b), 1.0, CallSite::unknown());
}
Tensor operator*(const Tensor& a, double b) {
  return mul(a, scalar_like(a, b), CallSite::unknown());
}
Tensor operator/(const Tensor& a, double b) {
  return div(a, scalar_like(a, b), CallSite::unknown());
}
Tensor operator+(double a, const Tensor& b) {
  return add(scalar_like(b, a), b, 1.0, CallSite::unknown());
}
Tensor operator-(double a, const Tensor& b) {
  return sub(scalar_like(b, a), b, 1.0, CallSite::unknown());
}
Tensor operator*(double a, const Tensor& b) {
  return mul(scalar_like(b, a), b, CallSite::unknown());
}
Tensor operator/(double a, const Tensor& b) {
  return div(scalar_like(b, a), b, CallSite::unknown());
}
Tensor operator-(const Tensor& a) { return neg(a, CallSite::unknown()); }

Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b, CallSite::unknown()); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b, CallSite::unknown()); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b, CallSite::unknown()); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b, CallSite::unknown()); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b, CallSite::unknown()); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b, CallSite::unknown()); }
Tensor operator==(const Tensor& a, double b) {
  return eq(a, scalar_like(a, b), CallSite::unknown());
}
Tensor operator!=(const Tensor& a, double b) {
  return ne(a, scalar_like(a, b), CallSite::unknown());
}
Tensor operator<(const Tensor& a, double b) {
  return lt(a, scalar_like(a, b), CallSite::unknown());
}
Tensor operator<=(const Tensor& a, double b) {
  return le(a, scalar_like(a, b), CallSite::unknown());
}
Tensor operator>(const Tensor& a, double b) {
  return gt(a, scalar_like(a, b), CallSite::unknown());
}
Tensor operator>=(const Tensor& a, double b) {
  return ge(a, scalar_like(a, b), CallSite::unknown());
}
Tensor operator==(double a, const Tensor& b) {
  return eq(scalar_like(b, a), b, CallSite::unknown());
}
Tensor operator!=(double a, const Tensor& b) {
  return ne(scalar_like(b, a), b, CallSite::unknown());
}
Tensor operator<(double a, const Tensor& b) {
  return lt(scalar_like(b, a), b, CallSite::unknown());
}
Tensor operator<=(double a, const Tensor& b) {
  return le(scalar_like(b, a), b, CallSite::unknown());
}
Tensor operator>(double a, const Tensor& b) {
  return gt(scalar_like(b, a), b, CallSite::unknown());
}
Tensor operator>=(double a, const Tensor& b) {
  return ge(scalar_like(b, a), b, CallSite::unknown());
}

}  // namespace sg
