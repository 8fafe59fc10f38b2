// The fast elementwise kernels: a large tensor is cut into blocks of rows (dim 0) over the thread
// pool (parallel.h), each block running the reference's loop (backend/cpu/elementwise.cpp,
// unary.cpp, binary.cpp); every operand was broadcast to out's shape by the op, so rows_of cuts
// them alike. copy also takes rows of 4-64 contiguous elements in one move each (copy_rows.h), and
// rounding to bfloat16 runs 16 floats at a time in AVX-512 registers over dense tensors.
#include <algorithm>

#include "autograd/backend/cpu_fast/avx512_rows.h"
#include "autograd/backend/cpu_fast/copy_rows.h"
#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/generator.h"

namespace sg::cpu {

namespace {

template <typename F>  // f(rows): the kernel on a block of rows, given as a function of a tensor
void over_rows(const Tensor& out, F&& f) {
  const int64_t n = out.dim() == 0 ? 1 : out.size(0), numel = out.numel();
  if (out.dim() == 0 || n < 2 || numel < 2 * kParallelGrain) {
    return f([](const Tensor& t) -> const Tensor& { return t; });
  }
  parallel_for(n, std::max<int64_t>(1, kParallelGrain / (numel / n)), [&](int64_t lo, int64_t hi) {
    f([lo, hi](const Tensor& t) { return rows_of(t, lo, hi); });
  });
}

}  // namespace

void FastCpuBackend::fill(const Tensor& out, double value) {
  over_rows(out, [&](auto rows) { CpuBackend::fill(rows(out), value); });
}
void FastCpuBackend::copy(const Tensor& src, const Tensor& dst) {
  over_rows(dst, [&](auto rows) {
    if (!copy_short_rows(rows(src), rows(dst))) CpuBackend::copy(rows(src), rows(dst));
  });
}
void FastCpuBackend::unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha,
                           double beta) {
  over_rows(out, [&](auto rows) { CpuBackend::unary(op, rows(x), rows(out), alpha, beta); });
}
void FastCpuBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  over_rows(out, [&](auto rows) { CpuBackend::binary(op, rows(a), rows(b), rows(out)); });
}
void FastCpuBackend::where(const Tensor& condition, const Tensor& a, const Tensor& b,
                           const Tensor& out) {
  over_rows(out,
            [&](auto rows) { CpuBackend::where(rows(condition), rows(a), rows(b), rows(out)); });
}

void FastCpuBackend::uniform(const Tensor& out, uint64_t state) {
  dispatch_floating("uniform", out.dtype(), [&]<typename T>() {
    T* o = out.data_ptr<T>();
    parallel_for(out.numel(), /*grain=*/1 << 16, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        o[i] = static_cast<T>(uniform_at(state, static_cast<uint64_t>(i) + 1));
      }
    });
  });
}

void FastCpuBackend::round_to_bfloat16(const Tensor& x, const Tensor& out) {
#ifdef SG_AVX512_ROWS
  // One flat walk where x and out lay their elements out alike in one block of memory.
  bool same_layout = true;
  for (int64_t d = 0; d < x.dim(); ++d)
    same_layout &= x.size(d) == 1 || x.stride(d) == out.stride(d);
  if (avx512::cpu_has_avx512() && x.numel() > 0 && same_layout &&
      is_non_overlapping_and_dense(x.shape(), x.strides())) {
    const float* in = x.data_ptr<float>();
    float* o = out.data_ptr<float>();
    parallel_for(x.numel(), /*grain=*/1 << 16, [&](int64_t lo, int64_t hi) {
      avx512::round_floats_to_bfloat16(in + lo, o + lo, hi - lo);
    });
    return;
  }
#endif
  CpuBackend::round_to_bfloat16(x, out);
}

}  // namespace sg::cpu
