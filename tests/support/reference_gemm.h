// The naive matrix product: the reference the BLAS path is tested against (as llm.c keeps
// matmul_forward_naive beside its fast kernels). Three loops in float64, and torch.matmul's rules
// (vectors promoted, batch dims broadcast) spelled out with explicit index arithmetic, so that it
// shares no code with autograd/ops/matmul.cpp beyond reading the inputs' values.
//
//   EXPECT_TRUE(tensors_near(sg::matmul(a, b), sg::testing::reference_matmul(a, b), 1e-12));
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "autograd/autograd.h"

namespace sg::testing {

// c [M, N] = a [M, K] · b [K, N], all row-major.
inline std::vector<double> reference_gemm(const std::vector<double>& a,
                                          const std::vector<double>& b, int64_t M, int64_t K,
                                          int64_t N) {
  std::vector<double> c(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0.0;
      for (int64_t k = 0; k < K; ++k) sum += a[i * K + k] * b[k * N + j];
      c[i * N + j] = sum;
    }
  }
  return c;
}

// torch.matmul(a, b) in float64, one matrix at a time through reference_gemm.
inline Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  // Vectors as matrices: a 1-D a is the row [1, K], a 1-D b the column [K, 1].
  Shape a_shape = a.shape(), b_shape = b.shape();
  if (a.dim() == 1) a_shape.insert(a_shape.begin(), 1);
  if (b.dim() == 1) b_shape.push_back(1);
  const int64_t M = a_shape[a_shape.size() - 2], K = a_shape.back(), N = b_shape.back();
  const Shape a_batch(a_shape.begin(), a_shape.end() - 2),
      b_batch(b_shape.begin(), b_shape.end() - 2);

  // Broadcast batch shape, right-aligned.
  const size_t nb = std::max(a_batch.size(), b_batch.size());
  auto size_at = [nb](const Shape& s, size_t i) {  // i counts from the left of the nb dims
    const size_t lead = nb - s.size();
    return i < lead ? int64_t{1} : s[i - lead];
  };
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t sa = size_at(a_batch, i), sb = size_at(b_batch, i);
    batch[i] = sa == 1 ? sb : sa;  // the caller checked that they match or one is 1
  }

  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  const int64_t count = numel_of(batch);
  std::vector<double> out(static_cast<size_t>(count * M * N));
  std::vector<int64_t> index(nb, 0);  // the current batch index, row-major
  for (int64_t n = 0; n < count; ++n) {
    // The matrix of a (and of b) that this batch index reads: size-1 dims always read index 0.
    int64_t a_matrix = 0, b_matrix = 0;
    for (size_t i = 0; i < nb; ++i) {
      const int64_t sa = size_at(a_batch, i), sb = size_at(b_batch, i);
      a_matrix = a_matrix * sa + (sa == 1 ? 0 : index[i]);
      b_matrix = b_matrix * sb + (sb == 1 ? 0 : index[i]);
    }
    const std::vector<double> am(av.begin() + a_matrix * M * K,
                                 av.begin() + (a_matrix + 1) * M * K);
    const std::vector<double> bm(bv.begin() + b_matrix * K * N,
                                 bv.begin() + (b_matrix + 1) * K * N);
    const std::vector<double> cm = reference_gemm(am, bm, M, K, N);
    std::copy(cm.begin(), cm.end(), out.begin() + n * M * N);
    for (size_t i = nb; i-- > 0;) {  // next batch index
      if (++index[i] < batch[i]) break;
      index[i] = 0;
    }
  }

  Shape out_shape = batch;
  if (a.dim() > 1) out_shape.push_back(M);
  if (b.dim() > 1) out_shape.push_back(N);
  return from_vector(out, out_shape);
}

}  // namespace sg::testing
