// Tensor: a cheap handle to shared storage plus shape, strides and an offset.
//
//   auto x = sg::randn({2, 3}, sg::TensorOptions().requires_grad(true));  // float32 on the CPU
//   auto y = x.transpose(0, 1);        // a view: same storage, strides swapped, nothing copied
//   auto loss = (y * y).sum();         // ops record a graph because x requires grad
//   loss.backward();                   // x.grad() is now 2 * x
//
// Copying a Tensor copies the handle, not the data (like PyTorch and std::shared_ptr). Views share
// storage with their base; contiguous() and clone() are the explicit copies.
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/call_site.h"
#include "autograd/device.h"
#include "autograd/dtype.h"
#include "autograd/shape.h"
#include "autograd/storage.h"

namespace sg {

class Node;
class Tensor;

// The dims a reduction runs over: one dim or a list, as LibTorch's IntArrayRef takes either, so
// x.sum(-1), x.sum({-1}) and x.sum({0, 2}) all read as in PyTorch. An empty list means all dims.
class Dims {
 public:
  Dims() = default;
  Dims(int64_t dim) : dims_{dim} {}  // NOLINT: x.sum(-1), a single dim
  Dims(std::initializer_list<int64_t> dims) : dims_(dims) {}
  Dims(std::vector<int64_t> dims) : dims_(std::move(dims)) {}  // NOLINT
  // x.sum(true) would be dim 1; keepdim is the second argument: x.sum(dims, true).
  template <std::same_as<bool> B>
  Dims(B) = delete;
  const std::vector<int64_t>& vec() const { return dims_; }

 private:
  std::vector<int64_t> dims_;
};

// Options for factories, chainable: TensorOptions().dtype(kFloat64).requires_grad(true).
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}  // NOLINT: lets factories take a bare dtype
  TensorOptions dtype(DType d) const {
    return with([&](TensorOptions& o) { o.dtype_ = d; });
  }
  TensorOptions device(Device d) const {
    return with([&](TensorOptions& o) { o.device_ = d; });
  }
  TensorOptions requires_grad(bool r) const {
    return with([&](TensorOptions& o) { o.requires_grad_ = r; });
  }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  template <typename F>
  TensorOptions with(F&& f) const {
    TensorOptions copy = *this;
    f(copy);
    return copy;
  }
  DType dtype_ = kFloat32;
  Device device_ = kCPU;
  bool requires_grad_ = false;
};

// What a tensor is made of. Users meet it only through Tensor.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Strides strides;
  int64_t offset = 0;  // in elements, from the start of storage
  DType dtype = kFloat32;

  // Autograd state: a leaf that requires grad accumulates into `grad`; a computed tensor points
  // at the node that made it (grad_fn), which knows how to send gradients to its inputs.
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<Node> grad_fn;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor: defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& sizes() const { return shape(); }
  int64_t size(int64_t dim) const;
  const Strides& strides() const;
  int64_t stride(int64_t dim) const;
  int64_t storage_offset() const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const { return numel_of(shape()); }
  DType dtype() const;
  Device device() const;
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  bool is_contiguous() const;
  bool is_floating_point() const { return is_floating(dtype()); }
  int64_t version() const;  // bumped by every in-place write to this storage
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  bool shares_storage(const Tensor& other) const;
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);  // only on leaves
  bool is_leaf() const;
  Tensor grad() const;                // accumulated gradient of a leaf, or undefined
  void set_grad(const Tensor& grad);  // replace (or with an undefined tensor: clear) it
  const std::shared_ptr<Node>& grad_fn() const;
  // Backpropagate from this tensor. A scalar needs no `gradient`; any other tensor does, of the
  // same shape. The graph is freed afterwards unless retain_graph (by default: create_graph).
  // create_graph records the backward pass itself, so the .grad() it leaves can be differentiated
  // again (autograd/grad.h).
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  Tensor detach() const;  // same data, no history, requires_grad false
  // Makes this leaf use src's data (storage, shape, strides, dtype) while staying the same tensor:
  // every handle to it sees the change. Module::to(device) moves parameters this way. Clears grad.
  void set_data(const Tensor& src);

  // ---- data in and out ----
  template <typename T>
  T item() const;  // the single element of a one-element tensor, converted to T
  template <typename T>
  std::vector<T> to_vector() const;  // a flat row-major copy of any tensor, views included
  template <typename T>
  T at(const std::vector<int64_t>& index) const;  // one element, for tests and examples
  template <typename T>
  T* data_ptr() const;  // raw pointer to element [0, ..., 0]; dtype must match T
  void* raw_data() const;
  std::string str() const;  // PyTorch-like printout, summarised with ... for big tensors

  // ---- conversions ----
  Tensor to(DType dtype, CallSite site = CallSite::current()) const;
  Tensor to(Device device) const;
  Tensor contiguous(CallSite site = CallSite::current())
      const;             // this tensor if already contiguous, else a contiguous copy
  Tensor clone() const;  // always a copy

  // ---- views (no data copied; see autograd/ops/views.cpp) ----
  Tensor view(const Shape& shape, CallSite site = CallSite::current()) const;
  Tensor reshape(const Shape& shape, CallSite site = CallSite::current()) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1,
                 CallSite site = CallSite::current()) const;
  Tensor transpose(int64_t dim0, int64_t dim1, CallSite site = CallSite::current()) const;
  Tensor t(CallSite site = CallSite::current()) const;  // transpose of a 2-D tensor
  Tensor permute(const std::vector<int64_t>& dims, CallSite site = CallSite::current()) const;
  Tensor unsqueeze(int64_t dim, CallSite site = CallSite::current()) const;
  Tensor squeeze(CallSite site = CallSite::current()) const;
  Tensor squeeze(int64_t dim, CallSite site = CallSite::current()) const;
  Tensor expand(const Shape& shape, CallSite site = CallSite::current()) const;
  Tensor expand_as(const Tensor& other, CallSite site = CallSite::current()) const {
    return expand(other.shape(), site);
  }
  Tensor narrow(int64_t dim, int64_t start, int64_t length,
                CallSite site = CallSite::current()) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1,
               CallSite site = CallSite::current()) const;
  Tensor select(int64_t dim, int64_t index, CallSite site = CallSite::current()) const;

  // ---- elementwise (autograd/ops/unary.cpp, binary.cpp) ----
  Tensor neg(CallSite site = CallSite::current()) const;
  Tensor exp(CallSite site = CallSite::current()) const;
  Tensor log(CallSite site = CallSite::current()) const;
  Tensor sqrt(CallSite site = CallSite::current()) const;
  Tensor rsqrt(CallSite site = CallSite::current()) const;
  Tensor abs(CallSite site = CallSite::current()) const;
  Tensor tanh(CallSite site = CallSite::current()) const;
  Tensor sigmoid(CallSite site = CallSite::current()) const;
  Tensor relu(CallSite site = CallSite::current()) const;
  Tensor pow(double exponent, CallSite site = CallSite::current()) const;
  Tensor pow(const Tensor& exponent, CallSite site = CallSite::current()) const;
  Tensor clamp(std::optional<double> min, std::optional<double> max,
               CallSite site = CallSite::current()) const;
  Tensor logical_not(CallSite site = CallSite::current()) const;
  Tensor eq(const Tensor& other, CallSite site = CallSite::current()) const;
  Tensor ne(const Tensor& other, CallSite site = CallSite::current()) const;
  Tensor lt(const Tensor& other, CallSite site = CallSite::current()) const;
  Tensor le(const Tensor& other, CallSite site = CallSite::current()) const;
  Tensor gt(const Tensor& other, CallSite site = CallSite::current()) const;
  Tensor ge(const Tensor& other, CallSite site = CallSite::current()) const;
  Tensor eq(double other, CallSite site = CallSite::current()) const;
  Tensor ne(double other, CallSite site = CallSite::current()) const;
  Tensor lt(double other, CallSite site = CallSite::current()) const;
  Tensor le(double other, CallSite site = CallSite::current()) const;
  Tensor gt(double other, CallSite site = CallSite::current()) const;
  Tensor ge(double other, CallSite site = CallSite::current()) const;

  // ---- reductions (autograd/ops/reduce.cpp) ----
  // dims is one dim or a list: x.sum(-1, true), x.mean({0, 2}); an empty list means all dims.
  Tensor sum(CallSite site = CallSite::current()) const;
  Tensor sum(const Dims& dims, bool keepdim = false, CallSite site = CallSite::current()) const;
  Tensor mean(CallSite site = CallSite::current()) const;
  Tensor mean(const Dims& dims, bool keepdim = false, CallSite site = CallSite::current()) const;
  Tensor var(const Dims& dims, int64_t correction = 1, bool keepdim = false,
             CallSite site = CallSite::current()) const;
  Tensor amax(const Dims& dims = {}, bool keepdim = false,
              CallSite site = CallSite::current()) const;
  Tensor amin(const Dims& dims = {}, bool keepdim = false,
              CallSite site = CallSite::current()) const;
  Tensor max(CallSite site = CallSite::current()) const;
  std::pair<Tensor, Tensor> max(int64_t dim, bool keepdim = false,
                                CallSite site = CallSite::current()) const;  // values, indices
  Tensor min(CallSite site = CallSite::current()) const;
  std::pair<Tensor, Tensor> min(int64_t dim, bool keepdim = false,
                                CallSite site = CallSite::current()) const;
  Tensor argmax(int64_t dim, bool keepdim = false, CallSite site = CallSite::current()) const;
  Tensor argmin(int64_t dim, bool keepdim = false, CallSite site = CallSite::current()) const;

  // ---- the rest (matmul.cpp, softmax.cpp, masking.cpp, indexing.cpp) ----
  Tensor matmul(const Tensor& other, CallSite site = CallSite::current()) const;
  Tensor softmax(int64_t dim, CallSite site = CallSite::current()) const;
  Tensor log_softmax(int64_t dim, CallSite site = CallSite::current()) const;
  Tensor masked_fill(const Tensor& mask, double value, CallSite site = CallSite::current()) const;
  Tensor index_select(int64_t dim, const Tensor& index, CallSite site = CallSite::current()) const;
  Tensor gather(int64_t dim, const Tensor& index, CallSite site = CallSite::current()) const;
  Tensor tril(int64_t diagonal = 0, CallSite site = CallSite::current()) const;
  Tensor triu(int64_t diagonal = 0, CallSite site = CallSite::current()) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0,
                            CallSite site = CallSite::current()) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0,
                            CallSite site = CallSite::current()) const;

  // ---- in place (autograd/ops/inplace.cpp): for optimizers and initialisers ----
  // Each bumps the version counter. They refuse a tensor that requires grad while grad mode is
  // on: wrap optimizer steps in NoGradGuard.
  Tensor& zero_();
  Tensor& fill_(double value);
  Tensor& copy_(const Tensor& src);  // src is broadcast to this tensor's shape and converted
  Tensor& add_(const Tensor& other, double alpha = 1.0);
  Tensor& add_(double other);
  Tensor& sub_(const Tensor& other, double alpha = 1.0);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(double other);
  Tensor& div_(const Tensor& other);
  Tensor& div_(double other);
  Tensor& addcmul_(const Tensor& a, const Tensor& b, double value = 1.0);  // += value * a * b
  Tensor& addcdiv_(const Tensor& a, const Tensor& b, double value = 1.0);  // += value * a / b
  Tensor& uniform_(double low = 0.0, double high = 1.0);
  Tensor& normal_(double mean = 0.0, double std = 1.0);

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// One tensor operand of a C++ operator (a + b, -a, x < 0.5), with where the operator is written.
// An operator cannot take a CallSite parameter as an op does (call_site.h), but this implicit
// conversion from a Tensor can: its default argument is evaluated in the user's expression, so
// `a / b` with bad shapes names the user's line, as sg::div(a, b) does.
class Operand {
 public:
  Operand(const Tensor& t, std::source_location loc = std::source_location::current())
      : tensor(t), site(CallSite::current(loc)) {}
  const Tensor& tensor;
  CallSite site;
};

// Elementwise arithmetic with broadcasting; a double operand becomes a 0-d tensor of the other
// operand's dtype (int64 tensors meeting a fractional double become float32, as in PyTorch).
Tensor operator+(const Tensor& a, Operand b);
Tensor operator-(const Tensor& a, Operand b);
Tensor operator*(const Tensor& a, Operand b);
Tensor operator/(const Tensor& a, Operand b);
Tensor operator+(Operand a, double b);
Tensor operator-(Operand a, double b);
Tensor operator*(Operand a, double b);
Tensor operator/(Operand a, double b);
Tensor operator+(double a, Operand b);
Tensor operator-(double a, Operand b);
Tensor operator*(double a, Operand b);
Tensor operator/(double a, Operand b);
Tensor operator-(Operand a);

// Elementwise comparisons with broadcasting, as in PyTorch: bool tensors, for masks
// (x.masked_fill(x == 0, v), 0 < x). They compare values; whether two handles are the same tensor
// is a.is_same(b).
// == and != take two Operands: C++20 also tries each with its arguments swapped, and a
// (Tensor, Operand) pair would then match both ways.
Tensor operator==(Operand a, Operand b);
Tensor operator!=(Operand a, Operand b);
Tensor operator<(const Tensor& a, Operand b);
Tensor operator<=(const Tensor& a, Operand b);
Tensor operator>(const Tensor& a, Operand b);
Tensor operator>=(const Tensor& a, Operand b);
Tensor operator==(Operand a, double b);
Tensor operator!=(Operand a, double b);
Tensor operator<(Operand a, double b);
Tensor operator<=(Operand a, double b);
Tensor operator>(Operand a, double b);
Tensor operator>=(Operand a, double b);
Tensor operator==(double a, Operand b);
Tensor operator!=(double a, Operand b);
Tensor operator<(double a, Operand b);
Tensor operator<=(double a, Operand b);
Tensor operator>(double a, Operand b);
Tensor operator>=(double a, Operand b);

}  // namespace sg

template <>
struct fmt::formatter<sg::Tensor> : fmt::formatter<std::string> {
  auto format(const sg::Tensor& t, fmt::format_context& ctx) const {
    return fmt::formatter<std::string>::format(t.str(), ctx);
  }
};

namespace sg {
std::ostream& operator<<(std::ostream& os, const Tensor& t);
}
