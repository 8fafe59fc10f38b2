// The CPU's fused Linear layer (backend.h: linear, linear_backward) for layers of at most 64
// outputs and inputs, the tiny model's: each pass is one job for the thread pool, every product
// in narrow_gemm, each thread on its own rows (the rows it also had in the kernels before).
//   forward   out[rows] = bias + x[rows]·Wᵀ      (the bias is where the sums start: no copy)
//   backward  dx[rows] = g[rows]·W, and per block of rows a partial dW = g[rows]ᵀ·x[rows] and
//             a partial db = Σ g[rows], the partials added in block order afterwards
// fused_linear composed this from gemm, copy and sum: a copy of the bias, three products and a
// column sum, five jobs and four allocations per layer and step (bench/NOTES.md has the timings).
// Wider layers, float64 and CPUs without AVX-512 decline: the op composes them from matmul and
// add (ops/linear.cpp), whose products OpenBLAS runs as fast as anything here.
#include <algorithm>
#include <vector>

#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/backend/cpu_fast/narrow_gemm.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/backend/cpu_fast/transpose.h"

namespace sg::cpu {

namespace {

// Rows of a Linear layer's product worth one thread's share (kMinSplitFlops).
int64_t rows_per_share(int64_t in, int64_t out) {
  return std::max<int64_t>(1, static_cast<int64_t>(kMinSplitFlops / (2.0 * double(in * out))));
}

// The weight gradient's rows are summed in blocks whose count depends on the shape alone, so that
// the partial sums, and the result, are the same bits with any number of threads (Note [Blocks
// fixed by the shape] in parallel.h).
int64_t row_blocks(int64_t rows, int64_t in, int64_t out) {
  return fixed_blocks(static_cast<double>(rows), static_cast<double>(rows_per_share(in, out)));
}

// Whether the layer's three products fit narrow_gemm: out = x·Wᵀ, dx = g·W and dW = gᵀ·x.
bool fits(int64_t rows, int64_t in, int64_t out_features) {
  return rows > 0 && in > 0 && narrow_gemm_fits(rows, out_features, in) &&
         narrow_gemm_fits(rows, in, out_features) && narrow_gemm_fits(out_features, in, rows);
}

}  // namespace

bool FastCpuBackend::linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                            const Tensor& out) {
  const int64_t rows = x.size(0), in = x.size(1), out_features = weight.size(0);
  // Wider layers (and float64) decline: the op composes them from matmul and add, and OpenBLAS is
  // as fast as anything here for their products.
  if (x.dtype() != kFloat32 || !fits(rows, in, out_features)) return false;
  const Tensor x_rows = x.contiguous(), b = bias.defined() ? bias.contiguous() : Tensor();
  const float* w = weight.data_ptr<float>();
  const int64_t w_rs = weight.stride(0), w_cs = weight.stride(1);
  // Wᵀ [in, out] in rows, once for every share: narrow_gemm reads b by rows.
  std::vector<float> w_t(static_cast<size_t>(in * out_features));
  if (w_cs == 1) {
    transpose_into_rows(w, w_rs, out_features, in, 1.0f, w_t.data(), out_features);
  } else {
    for (int64_t o = 0; o < out_features; ++o) {
      for (int64_t i = 0; i < in; ++i) w_t[i * out_features + o] = w[o * w_rs + i * w_cs];
    }
  }
  const float* px = x_rows.data_ptr<float>();
  const float* pb = b.defined() ? b.data_ptr<float>() : nullptr;
  float* py = out.data_ptr<float>();
  parallel_for(rows, rows_per_share(in, out_features), [&](int64_t lo, int64_t hi) {
    narrow_gemm(hi - lo, out_features, in, px + lo * in, in, 1, w_t.data(), out_features, pb,
                py + lo * out_features, out_features, /*accumulate=*/false);
  });
  return true;
}

bool FastCpuBackend::linear_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                                     const Tensor& dx, const Tensor& dweight, const Tensor& dbias) {
  const int64_t rows = grad.size(0), out_features = grad.size(1);
  const int64_t in = dx.defined() ? dx.size(1) : dweight.defined() ? dweight.size(1) : 0;
  // The forward took the layer only where all three products fit (fits above).
  if (grad.dtype() != kFloat32 || !fits(rows, in, out_features)) return false;
  const Tensor g_rows = grad.contiguous();
  const Tensor x_rows = dweight.defined() ? x.contiguous() : Tensor();
  const Tensor w = dx.defined() ? weight.contiguous() : Tensor();
  const float* pg = g_rows.data_ptr<float>();
  const float* px = x_rows.defined() ? x_rows.data_ptr<float>() : nullptr;
  const float* pw = w.defined() ? w.data_ptr<float>() : nullptr;
  float* pdx = dx.defined() ? dx.data_ptr<float>() : nullptr;

  const int64_t blocks = row_blocks(rows, in, out_features);
  const int64_t dw_size = dweight.defined() ? out_features * in : 0;
  const int64_t db_size = dbias.defined() ? out_features : 0;
  std::vector<float> partials(static_cast<size_t>(blocks * (dw_size + db_size)));
  parallel_for(blocks, 1, [&](int64_t first, int64_t end) {
    for (int64_t block = first; block < end; ++block) {
      const int64_t lo = rows * block / blocks, hi = rows * (block + 1) / blocks;
      const float* g = pg + lo * out_features;
      if (pdx != nullptr) {  // dx[lo:hi] = g[lo:hi]·W, W [out, in] already in rows
        narrow_gemm(hi - lo, in, out_features, g, out_features, 1, pw, in, nullptr, pdx + lo * in,
                    in, /*accumulate=*/false);
      }
      float* partial = partials.data() + block * (dw_size + db_size);
      if (dw_size > 0) {  // g[lo:hi]ᵀ·x[lo:hi]: gᵀ read in place, a transposed a
        narrow_gemm(out_features, in, hi - lo, g, 1, out_features, px + lo * in, in, nullptr,
                    partial, in, /*accumulate=*/false);
      }
      if (db_size > 0) {
        // Four rows per pass over db: one load-add-store chain through db per row was the
        // limit (as in the column sums of reduce.cpp).
        float* db = partial + dw_size;  // zeroed by the vector
        int64_t r = lo;
        for (; r + 4 <= hi; r += 4) {
          const float* g_r = pg + r * out_features;
          const int64_t o1 = out_features, o2 = 2 * out_features, o3 = 3 * out_features;
#pragma omp simd
          for (int64_t o = 0; o < out_features; ++o) {
            db[o] += (g_r[o] + g_r[o1 + o]) + (g_r[o2 + o] + g_r[o3 + o]);
          }
        }
        for (; r < hi; ++r) {
          const float* g_r = pg + r * out_features;
#pragma omp simd
          for (int64_t o = 0; o < out_features; ++o) db[o] += g_r[o];
        }
      }
    }
  });
  // The blocks' sums, added in block order.
  auto add_blocks = [&](float* total, int64_t offset, int64_t size) {
    std::copy_n(partials.data() + offset, size, total);
    for (int64_t block = 1; block < blocks; ++block) {
      const float* partial = partials.data() + block * (dw_size + db_size) + offset;
#pragma omp simd
      for (int64_t i = 0; i < size; ++i) total[i] += partial[i];
    }
  };
  if (dw_size > 0) add_blocks(dweight.data_ptr<float>(), 0, dw_size);
  if (db_size > 0) add_blocks(dbias.data_ptr<float>(), dw_size, db_size);
  return true;
}

}  // namespace sg::cpu
