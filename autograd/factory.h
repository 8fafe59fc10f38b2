// Making tensors.
//   sg::zeros({2, 3});                               // float32 zeros
//   sg::full({2}, 7.0, sg::kInt64);                  // [7, 7]
//   sg::arange(0, 10, 2);                            // [0, 2, 4, 6, 8], int64
//   sg::from_vector<float>({1, 2, 3, 4}, {2, 2});    // data copied in, row-major
//   sg::tensor({1.0, 2.0, 3.0});                     // 1-D float32 from a list
#pragma once

#include <initializer_list>
#include <type_traits>
#include <vector>

#include "autograd/generator.h"
#include "autograd/tensor.h"

namespace sg {

Tensor empty(const Shape& shape, TensorOptions options = {});  // uninitialised
// Uninitialised, with the given strides (non-negative), as torch.empty_strided: storage for every
// element they reach. empty_strided(t.shape(), t.strides()) lays a copy out as t is.
Tensor empty_strided(const Shape& shape, const Strides& strides, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, double value, TensorOptions options = {});
Tensor scalar_tensor(double value, TensorOptions options = {});  // 0-d

// [start, end) in steps of `step`; int64 unless options say otherwise.
Tensor arange(double end, TensorOptions options = kInt64);
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = kInt64);
Tensor eye(int64_t n, TensorOptions options = {});

Tensor rand(const Shape& shape, TensorOptions options = {});   // uniform in [0, 1)
Tensor randn(const Shape& shape, TensorOptions options = {});  // standard normal
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options = kInt64);
Tensor rand(const Shape& shape, Generator& gen, TensorOptions options = {});
Tensor randn(const Shape& shape, Generator& gen, TensorOptions options = {});
Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen,
               TensorOptions options = kInt64);

Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);

// Copies `data` into a new tensor of `shape` (numel must match). The dtype comes from T unless
// options name another, in which case values are converted.
template <typename T>
Tensor from_vector(const std::vector<T>& data, const Shape& shape,
                   TensorOptions options = TensorOptions(dtype_of<T>::value));
template <typename T>
Tensor from_vector(const std::vector<T>& data) {
  return from_vector(data, Shape{static_cast<int64_t>(data.size())});
}

// Small literals for tests and examples: float32 by default (ints become float32 too unless
// options say int64).
// (A template, so that tensor({{1}, {0}}) is unambiguously 2-D; the values of one list must share
// a type: write {1.0, 2.5}, not {1, 2.5}.)
template <typename T>
requires std::is_arithmetic_v<T> Tensor tensor(std::initializer_list<T> values,
                                               TensorOptions options = {}) {
  std::vector<double> data(values.begin(), values.end());
  return from_vector(data, {static_cast<int64_t>(data.size())}, options);
}
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows,
              TensorOptions options = {});

}  // namespace sg
