#include "autograd/factory.h"

#include <cmath>
#include <limits>

#include "autograd/backend/backend.h"
#include "autograd/host_memory.h"
#include "autograd/node.h"

namespace sg {

Tensor empty(const Shape& shape, TensorOptions options) {
  for (int64_t s : shape) SG_CHECK(s >= 0, "empty: negative size in shape {}", shape);
  SG_CHECK(
      !options.requires_grad() || is_floating(options.dtype()),
      "factory: only floating point tensors (float32, float64, bfloat16) can require grad, got {}",
      options.dtype());
  const int64_t numel = numel_of(shape);  // throws when the product overflows
  const auto itemsize = static_cast<int64_t>(dtype_size(options.dtype()));
  SG_CHECK(numel <= std::numeric_limits<int64_t>::max() / itemsize,
           "empty: shape {} of {} needs more bytes than fit in a 64-bit size", shape,
           options.dtype());
  const auto nbytes = static_cast<uint64_t>(numel * itemsize);
  if (options.device().is_cpu() && nbytes >= kCheckedBytes) {  // more than the machine has?
    check_host_allocation(
        nbytes, backend_for(options.device()).reusable_bytes(),
        fmt::format("empty: {} tensor of shape {}", dtype_with_article(options.dtype()), shape));
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(nbytes), options.device());
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = options.dtype();
  impl->requires_grad = options.requires_grad();
  return Tensor(std::move(impl));
}

Tensor empty_strided(const Shape& shape, const Strides& strides, TensorOptions options) {
  SG_CHECK(strides.size() == shape.size(), "empty_strided: {} strides for shape {}", strides.size(),
           shape);
  int64_t extent = numel_of(shape) == 0 ? 0 : 1;  // elements the storage needs
  for (size_t d = 0; d < shape.size(); ++d) {
    SG_CHECK(strides[d] >= 0, "empty_strided: negative stride in {}", strides);
    if (shape[d] > 0 && extent > 0) extent += (shape[d] - 1) * strides[d];
  }
  Tensor block = empty({extent}, options);
  block.impl()->shape = shape;
  block.impl()->strides = strides;
  return block;
}

Tensor full(const Shape& shape, double value, TensorOptions options) {
  SG_CHECK(is_floating(options.dtype()) || options.dtype() == kBool || holds_int64(value),
           "full: {} is not a value of dtype {}", value, options.dtype());
  Tensor t = empty(shape, options);
  backend_for(t.device()).fill(t, value);
  return t;
}

Tensor zeros(const Shape& shape, TensorOptions options) { return full(shape, 0.0, options); }
Tensor ones(const Shape& shape, TensorOptions options) { return full(shape, 1.0, options); }
Tensor scalar_tensor(double value, TensorOptions options) { return full({}, value, options); }

Tensor arange(double end, TensorOptions options) { return arange(0, end, 1, options); }

namespace {
// A tensor whose element i (row-major) is value(i), called once per element in order: made in a
// host tensor in place (checked against the memory left like any tensor, never a vector of
// doubles beside it), then moved to the options' device.
template <typename Value>
Tensor generated(const char* op, const Shape& shape, TensorOptions options, Value value) {
  Tensor host = empty(shape, options.device(kCPU).requires_grad(false));
  dispatch_dtype_and_bfloat16(op, host.dtype(), [&]<typename D>() {
    D* p = host.data_ptr<D>();
    const int64_t n = host.numel();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<D>(value(i));
  });
  Tensor out = host.to(options.device());
  if (options.requires_grad()) out.requires_grad_(true);
  return out;
}
}  // namespace

Tensor arange(double start, double end, double step, TensorOptions options) {
  SG_CHECK(step != 0 && std::isfinite(step), "arange: step must be finite and non-zero, got {}",
           step);
  SG_CHECK(std::isfinite(start) && std::isfinite(end), "arange: start {} and end {} must be finite",
           start, end);
  SG_CHECK(is_floating(options.dtype()) || (holds_int64(start) && holds_int64(step)),
           "arange: start {} and step {} must be whole numbers for dtype {} (give a float dtype "
           "for a range of fractions)",
           start, step, options.dtype());
  const double count = std::max(0.0, std::ceil((end - start) / step));
  SG_CHECK(count < 0x1p62,
           "arange: [{}, {}) in steps of {} has {} elements, more than a tensor holds", start, end,
           step, count);
  const auto n = static_cast<int64_t>(count);
  return generated("arange", {n}, options,
                   [&](int64_t i) { return start + static_cast<double>(i) * step; });
}

Tensor eye(int64_t n, TensorOptions options) {
  return generated("eye", {n, n}, options, [n](int64_t i) { return i % (n + 1) == 0 ? 1.0 : 0.0; });
}

namespace {
// Random values are drawn on the host in row-major order, so a seed gives the same tensor on
// every device.
template <typename Draw>
Tensor random_tensor(const char* op, const Shape& shape, TensorOptions options, Draw draw) {
  return generated(op, shape, options, [&](int64_t) { return draw(); });
}
}  // namespace

// Uniform and normal draws are reals: an integer dtype would keep only their whole part.
void check_real_draws(const char* op, DType dtype) {
  SG_CHECK(is_floating(dtype), "{}: draws real numbers, not {} values (randint draws integers)", op,
           dtype);
}

Tensor rand(const Shape& shape, Generator& gen, TensorOptions options) {
  check_real_draws("rand", options.dtype());
  return random_tensor("rand", shape, options, [&] { return gen.next_uniform(); });
}
Tensor randn(const Shape& shape, Generator& gen, TensorOptions options) {
  check_real_draws("randn", options.dtype());
  return random_tensor("randn", shape, options, [&] { return gen.next_normal(); });
}
Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen,
               TensorOptions options) {
  SG_CHECK(low < high, "randint: low {} must be less than high {}", low, high);
  const auto range = static_cast<uint64_t>(high - low);
  return random_tensor("randint", shape, options, [&] {
    return static_cast<double>(low + static_cast<int64_t>(gen.next_u64() % range));
  });
}
Tensor rand(const Shape& shape, TensorOptions options) {
  return rand(shape, default_generator(), options);
}
Tensor randn(const Shape& shape, TensorOptions options) {
  return randn(shape, default_generator(), options);
}
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options) {
  return randint(low, high, shape, default_generator(), options);
}

Tensor empty_like(const Tensor& t) { return empty(t.shape(), t.options()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.options()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.options()); }
Tensor full_like(const Tensor& t, double value) { return full(t.shape(), value, t.options()); }
Tensor rand_like(const Tensor& t) { return rand(t.shape(), t.options()); }
Tensor randn_like(const Tensor& t) { return randn(t.shape(), t.options()); }

template <typename T>
Tensor from_vector(const std::vector<T>& data, const Shape& shape, TensorOptions options) {
  SG_CHECK(static_cast<int64_t>(data.size()) == numel_of(shape),
           "from_vector: {} values cannot fill shape {} ({} elements)", data.size(), shape,
           numel_of(shape));
  bool requires_grad = options.requires_grad();
  Tensor host = empty(shape, options.device(kCPU).requires_grad(false));
  dispatch_dtype_and_bfloat16("from_vector", host.dtype(), [&]<typename D>() {
    D* p = host.data_ptr<D>();
    // static_cast<T> first: std::vector<bool> hands out a proxy, not a bool.
    for (size_t i = 0; i < data.size(); ++i) p[i] = static_cast<D>(static_cast<T>(data[i]));
  });
  Tensor out = host.to(options.device());
  if (requires_grad) out.requires_grad_(true);
  return out;
}
template Tensor from_vector(const std::vector<bool>&, const Shape&, TensorOptions);
template Tensor from_vector(const std::vector<int64_t>&, const Shape&, TensorOptions);
template Tensor from_vector(const std::vector<float>&, const Shape&, TensorOptions);
template Tensor from_vector(const std::vector<double>&, const Shape&, TensorOptions);
template Tensor from_vector(const std::vector<BFloat16>&, const Shape&, TensorOptions);

Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, TensorOptions options) {
  std::vector<double> values;
  int64_t cols = rows.size() == 0 ? 0 : static_cast<int64_t>(rows.begin()->size());
  for (const auto& row : rows) {
    SG_CHECK(static_cast<int64_t>(row.size()) == cols, "tensor: ragged rows ({} and {} values)",
             cols, row.size());
    values.insert(values.end(), row.begin(), row.end());
  }
  return from_vector(values, {static_cast<int64_t>(rows.size()), cols}, options);
}

}  // namespace sg
