// CUDA layer normalisation over the last dim, forward and backward. The CUDA twin of
// cpu_fast/layer_norm.cpp (the formulas are there): a warp (rows up to 1024 values) or a block per
// row for the statistics and dx, and a column kernel for dweight and dbias, the sums over rows.
// Statistics accumulate in the element type (the CPU uses double); two passes, so no
// cancellation in the variance. A float row longer than a warp handles is read once into the
// block's registers where it fits (row_in_registers.cuh), and the passes run there.
#include <type_traits>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/launch.cuh"
#include "autograd/backend/cuda/row_in_registers.cuh"
#include "autograd/backend/elementwise_math.h"
#include "autograd/factory.h"

namespace sg::cuda {

namespace {

template <typename T, typename Group>
__device__ void layer_norm_row(const T* x, const T* w, const T* b, T eps, T* y, T* mean_out,
                               T* rstd_out, int64_t D, Group group) {
  T sum = 0;
  for (int64_t d = group.rank(); d < D; d += group.size()) sum += x[d];
  const T mean = group.reduce(sum, SumOp{}, T(0)) / static_cast<T>(D);
  T squares = 0;
  for (int64_t d = group.rank(); d < D; d += group.size()) {
    const T c = x[d] - mean;
    squares += c * c;
  }
  const T var = group.reduce(squares, SumOp{}, T(0)) / static_cast<T>(D);
  const T rstd = T(1) / elementwise::sqrt_of(var + eps);
  if (group.rank() == 0) {
    *mean_out = mean;
    *rstd_out = rstd;
  }
  for (int64_t d = group.rank(); d < D; d += group.size()) {
    T v = (x[d] - mean) * rstd;
    if (w != nullptr) v *= w[d];
    if (b != nullptr) v += b[d];
    y[d] = v;
  }
}

// dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂)) with x̂ = (x - mean) · rstd, ĝ = g · w.
template <typename T, typename Group>
__device__ void layer_norm_backward_row(const T* g, const T* x, T mean, T rstd, const T* w, T* dx,
                                        int64_t D, Group group) {
  T sum_g = 0, sum_gx = 0;
  for (int64_t d = group.rank(); d < D; d += group.size()) {
    const T xhat = (x[d] - mean) * rstd;
    const T ghat = w != nullptr ? g[d] * w[d] : g[d];
    sum_g += ghat;
    sum_gx += ghat * xhat;
  }
  const T a = group.reduce(sum_g, SumOp{}, T(0)) / static_cast<T>(D);
  const T c = group.reduce(sum_gx, SumOp{}, T(0)) / static_cast<T>(D);
  for (int64_t d = group.rank(); d < D; d += group.size()) {
    const T xhat = (x[d] - mean) * rstd;
    const T ghat = w != nullptr ? g[d] * w[d] : g[d];
    dx[d] = rstd * (ghat - a - xhat * c);
  }
}

struct Rows {
  int64_t rows, D;
};

template <typename T, typename Group>
__global__ void layer_norm_kernel(const T* x, const T* w, const T* b, T eps, T* y, T* mean, T* rstd,
                                  Rows s) {
  for (int64_t r = Group::first_row(); r < s.rows; r += Group::row_step()) {
    layer_norm_row(x + r * s.D, w, b, eps, y + r * s.D, mean + r, rstd + r, s.D, Group{});
  }
}

template <typename T, typename Group>
__global__ void layer_norm_backward_kernel(const T* g, const T* x, const T* mean, const T* rstd,
                                           const T* w, T* dx, Rows s) {
  for (int64_t r = Group::first_row(); r < s.rows; r += Group::row_step()) {
    layer_norm_backward_row(g + r * s.D, x + r * s.D, mean[r], rstd[r], w, dx + r * s.D, s.D,
                            Group{});
  }
}

// ---- long float rows in registers: one read of x (or of g and x), one write ----

template <int kVecs>
__global__ void __launch_bounds__(kMaxRowThreads)
    layer_norm_registers_kernel(const float* x, const float* w, const float* b, float eps, float* y,
                                float* mean_out, float* rstd_out, Rows s) {
  const int64_t vecs = s.D / 4;
  const auto* w4 = reinterpret_cast<const float4*>(w);
  const auto* b4 = reinterpret_cast<const float4*>(b);
  const float D = static_cast<float>(s.D);
  for (int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    RowSlice<kVecs> row;
    row.load(x + r * s.D, vecs);
    float sum = 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (row.has(k, vecs)) sum += sum4(row.v[k]);
    }
    const float mean = block_reduce(sum, SumOp{}, 0.0f) / D;
    float squares = 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (!row.has(k, vecs)) continue;
      squares += sum4(map4(row.v[k], [mean](float v) { return (v - mean) * (v - mean); }));
    }
    const float rstd = 1.0f / sqrtf(block_reduce(squares, SumOp{}, 0.0f) / D + eps);
    if (threadIdx.x == 0) {
      mean_out[r] = mean;
      rstd_out[r] = rstd;
    }
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (!row.has(k, vecs)) continue;
      float4 v = map4(row.v[k], [=](float xv) { return (xv - mean) * rstd; });
      if (w != nullptr) v = map4(v, w4[row.at(k)], [](float a, float c) { return a * c; });
      if (b != nullptr) v = map4(v, b4[row.at(k)], [](float a, float c) { return a + c; });
      row.v[k] = v;
    }
    row.store(y + r * s.D, vecs);
  }
}

// dx for rows of up to 4 float4s per thread. With kSums, the block also adds up dweight and
// dbias over the rows it visits (g · x̂ and g of its own columns, in registers) and writes them
// to row blockIdx.x of dw_partial and db_partial ([gridDim.x, D]): g and x are read once for
// all three gradients, instead of again by layer_norm_param_grads_kernel.
template <int kVecs, bool kSums>
__global__ void __launch_bounds__(512)
    layer_norm_backward_registers_kernel(const float* g, const float* x, const float* mean,
                                         const float* rstd, const float* w, float* dx,
                                         float* dw_partial, float* db_partial, Rows s) {
  const int64_t vecs = s.D / 4;
  const auto* w4 = reinterpret_cast<const float4*>(w);
  const float D = static_cast<float>(s.D);
  float4 dw[kSums ? kVecs : 1] = {}, db[kSums ? kVecs : 1] = {};
  for (int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    RowSlice<kVecs> ghat, xhat;  // loaded as g and x, turned into ĝ = g · w and x̂
    ghat.load(g + r * s.D, vecs);
    xhat.load(x + r * s.D, vecs);
    const float mu = mean[r], rs = rstd[r];
    float sum_g = 0, sum_gx = 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (!ghat.has(k, vecs)) continue;
      xhat.v[k] = map4(xhat.v[k], [=](float xv) { return (xv - mu) * rs; });
      if constexpr (kSums) {
        dw[k] = map4(dw[k], ghat.v[k], xhat.v[k],
                     [](float acc, float gv, float xh) { return acc + gv * xh; });
        db[k] = map4(db[k], ghat.v[k], [](float acc, float gv) { return acc + gv; });
      }
      if (w != nullptr) {
        ghat.v[k] = map4(ghat.v[k], w4[ghat.at(k)], [](float a, float c) { return a * c; });
      }
      sum_g += sum4(ghat.v[k]);
      sum_gx += sum4(map4(ghat.v[k], xhat.v[k], [](float a, float c) { return a * c; }));
    }
    const float a = block_reduce(sum_g, SumOp{}, 0.0f) / D;
    const float c = block_reduce(sum_gx, SumOp{}, 0.0f) / D;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      ghat.v[k] =
          map4(ghat.v[k], xhat.v[k], [=](float gh, float xh) { return rs * (gh - a - xh * c); });
    }
    ghat.store(dx + r * s.D, vecs);
  }
  if constexpr (kSums) {
    auto* dw4 = reinterpret_cast<float4*>(dw_partial + blockIdx.x * s.D);
    auto* db4 = reinterpret_cast<float4*>(db_partial + blockIdx.x * s.D);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (!RowSlice<kVecs>::has(k, vecs)) continue;
      dw4[RowSlice<kVecs>::at(k)] = dw[k];
      db4[RowSlice<kVecs>::at(k)] = db[k];
    }
  }
}

// dweight = Σ_rows g · x̂ and dbias = Σ_rows g: threadIdx.x picks the column (neighbouring threads
// read neighbouring addresses), threadIdx.y a share of the rows, added up in shared memory.
// blockIdx.y picks a chunk of `chunk_rows` rows; with several chunks each block writes its
// chunk's sums to row blockIdx.y of `dweight` and `dbias` ([chunks, D] partials, launch.cuh's
// "column sums cut into chunks").
constexpr int kColumns = 32, kRowShares = 16;

template <typename T>
__global__ void layer_norm_param_grads_kernel(const T* g, const T* x, const T* mean, const T* rstd,
                                              T* dweight, T* dbias, Rows s, int64_t chunk_rows) {
  __shared__ T partial_w[kRowShares][kColumns];
  __shared__ T partial_b[kRowShares][kColumns];
  const int64_t d = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  const bool active = d < s.D;  // no early return: every thread reaches __syncthreads
  const int64_t first = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t end = first + chunk_rows < s.rows ? first + chunk_rows : s.rows;
  T acc_w = 0, acc_b = 0;
  if (active) {
    for (int64_t r = first + threadIdx.y; r < end; r += kRowShares) {
      const T gv = g[r * s.D + d];
      acc_b += gv;
      acc_w += gv * ((x[r * s.D + d] - mean[r]) * rstd[r]);
    }
  }
  partial_w[threadIdx.y][threadIdx.x] = acc_w;
  partial_b[threadIdx.y][threadIdx.x] = acc_b;
  __syncthreads();
  if (threadIdx.y == 0 && active) {
    for (int k = 1; k < kRowShares; ++k) {
      acc_w += partial_w[k][threadIdx.x];
      acc_b += partial_b[k][threadIdx.x];
    }
    const int64_t at = static_cast<int64_t>(blockIdx.y) * s.D + d;
    if (dweight != nullptr) dweight[at] = acc_w;
    if (dbias != nullptr) dbias[at] = acc_b;
  }
}

// Launches kernel<Warp or Block> over s.rows rows with the right block shape.
template <typename WarpLaunch, typename BlockLaunch>
void launch_rows(Rows s, WarpLaunch warp_launch, BlockLaunch block_launch) {
  if (s.D <= kWarpRowLimit) {
    const dim3 block(kWarpSize, kRowsPerWarpBlock);
    const auto grid = static_cast<unsigned>(
        std::min<int64_t>(ceil_div(s.rows, kRowsPerWarpBlock), kMaxBlocks * 16));
    warp_launch(grid, block);
  } else {
    const auto grid = static_cast<unsigned>(std::min<int64_t>(s.rows, kMaxBlocks * 16));
    block_launch(grid, dim3(static_cast<unsigned>(block_threads_for(s.D))));
  }
  SG_CUDA_CHECK_LAUNCH();
}

template <typename T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}
template <typename T>
T* mutable_data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// The register paths: launched when T is float, the rows are longer than a warp handles, fit
// in registers and are aligned; otherwise nothing is launched, for the general path.
template <typename T>
bool layer_norm_in_registers(const T* x, const T* w, const T* b, T eps, T* y, T* mean, T* rstd,
                             Rows s) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    if (s.D <= kWarpRowLimit || !row_fits_in_registers(s.D) || !aligned_for_float4(x) ||
        !aligned_for_float4(y) || (w != nullptr && !aligned_for_float4(w)) ||
        (b != nullptr && !aligned_for_float4(b))) {
      return false;
    }
    launch_row_in_registers(s.D, [&]<int kVecs>(std::integral_constant<int, kVecs>, int threads) {
      layer_norm_registers_kernel<kVecs><<<blocks_for_rows(s.rows), threads, 0, launch_stream()>>>(
          x, w, b, eps, y, mean, rstd, s);
    });
    SG_CUDA_CHECK_LAUNCH();
    return true;
  }
}

struct RegisterPath {
  bool dx = false;    // dx was launched
  bool sums = false;  // and dweight and dbias (those defined) with it
};

// dx on the register path, and dweight and dbias in the same pass where their accumulators fit
// too (2 float4s per thread of each of g, x, dw, db): rows up to 4096. dx may be null (not
// wanted: nothing launched), as may dw and db.
template <typename T>
RegisterPath layer_norm_backward_in_registers(const T* g, const T* x, const T* mean, const T* rstd,
                                              const T* w, T* dx, T* dw, T* db, Rows s,
                                              const TensorOptions& options) {
  if constexpr (!std::is_same_v<T, float>) {
    return {};
  } else {
    if (dx == nullptr || s.rows == 0 || s.D <= kWarpRowLimit || !row_fits_in_registers(s.D, 2) ||
        !aligned_for_float4(g) || !aligned_for_float4(x) || !aligned_for_float4(dx) ||
        (w != nullptr && !aligned_for_float4(w))) {
      return {};
    }
    const bool sums = (dw != nullptr || db != nullptr) && s.D / 4 <= 1024;
    launch_row_in_registers<2>(
        s.D, [&]<int kVecs>(std::integral_constant<int, kVecs>, int threads) {
          if constexpr (kVecs <= 2) {
            if (sums) {
              const int64_t blocks = std::min<int64_t>(s.rows, 4 * multiprocessors());
              Tensor partial = empty({2, blocks, s.D}, options);
              float* pw = partial.data_ptr<float>();
              float* pb = pw + blocks * s.D;
              layer_norm_backward_registers_kernel<kVecs, true>
                  <<<static_cast<unsigned>(blocks), threads, 0, launch_stream()>>>(
                      g, x, mean, rstd, w, dx, pw, pb, s);
              SG_CUDA_CHECK_LAUNCH();
              if (dw != nullptr) launch_sum_chunks(pw, blocks, s.D, dw);
              if (db != nullptr) launch_sum_chunks(pb, blocks, s.D, db);
              return;
            }
          }
          layer_norm_backward_registers_kernel<kVecs, false>
              <<<blocks_for_rows(s.rows), threads, 0, launch_stream()>>>(g, x, mean, rstd, w, dx,
                                                                         nullptr, nullptr, s);
        });
    SG_CUDA_CHECK_LAUNCH();
    return {true, sums};
  }
}

}  // namespace

bool CudaBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                             const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  Scope scope(*this);
  const int64_t D = x.size(-1);
  const Rows s{D == 0 ? 0 : x.numel() / D, D};
  if (s.rows == 0) return true;
  dispatch_floating("layer_norm", x.dtype(), [&]<typename T>() {
    const T* px = x.data_ptr<T>();
    const T *w = data_or_null<T>(weight), *b = data_or_null<T>(bias);
    T *py = out.data_ptr<T>(), *pm = mean.data_ptr<T>(), *pr = rstd.data_ptr<T>();
    const T e = static_cast<T>(eps);
    if (layer_norm_in_registers(px, w, b, e, py, pm, pr, s)) return;
    launch_rows(
        s,
        [&](dim3 grid, dim3 block) {
          layer_norm_kernel<T, WarpGroup>
              <<<grid, block, 0, launch_stream()>>>(px, w, b, e, py, pm, pr, s);
        },
        [&](dim3 grid, dim3 block) {
          layer_norm_kernel<T, BlockGroup>
              <<<grid, block, 0, launch_stream()>>>(px, w, b, e, py, pm, pr, s);
        });
  });
  return true;
}

bool CudaBackend::layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                                      const Tensor& rstd, const Tensor& weight, const Tensor& dx,
                                      const Tensor& dweight, const Tensor& dbias) {
  Scope scope(*this);
  const int64_t D = x.size(-1);
  const Rows s{D == 0 ? 0 : x.numel() / D, D};
  dispatch_floating("layer_norm_backward", x.dtype(), [&]<typename T>() {
    const T *pg = grad.data_ptr<T>(), *px = x.data_ptr<T>();
    const T *pm = mean.data_ptr<T>(), *pr = rstd.data_ptr<T>(), *w = data_or_null<T>(weight);
    T *pdw = mutable_data_or_null<T>(dweight), *pdb = mutable_data_or_null<T>(dbias);
    const RegisterPath done = layer_norm_backward_in_registers(
        pg, px, pm, pr, w, dx.defined() ? dx.data_ptr<T>() : nullptr, pdw, pdb, s, x.options());
    if (dx.defined() && s.rows > 0 && !done.dx) {
      T* pdx = dx.data_ptr<T>();
      launch_rows(
          s,
          [&](dim3 grid, dim3 block) {
            layer_norm_backward_kernel<T, WarpGroup>
                <<<grid, block, 0, launch_stream()>>>(pg, px, pm, pr, w, pdx, s);
          },
          [&](dim3 grid, dim3 block) {
            layer_norm_backward_kernel<T, BlockGroup>
                <<<grid, block, 0, launch_stream()>>>(pg, px, pm, pr, w, pdx, s);
          });
    }
    if ((pdw != nullptr || pdb != nullptr) && D > 0 && !done.sums) {
      const int64_t chunks = row_chunks_for(s.rows, ceil_div(D, kColumns));
      const int64_t chunk_rows = ceil_div(s.rows, chunks);
      const dim3 block(kColumns, kRowShares);
      const dim3 grid(static_cast<unsigned>(ceil_div(D, kColumns)), static_cast<unsigned>(chunks));
      if (chunks == 1) {
        layer_norm_param_grads_kernel<<<grid, block, 0, launch_stream()>>>(pg, px, pm, pr, pdw, pdb,
                                                                           s, chunk_rows);
        SG_CUDA_CHECK_LAUNCH();
      } else {
        Tensor partial = empty({2, chunks, D}, x.options());
        T* pw = partial.data_ptr<T>();
        T* pb = pw + chunks * D;
        layer_norm_param_grads_kernel<<<grid, block, 0, launch_stream()>>>(
            pg, px, pm, pr, pdw ? pw : nullptr, pdb ? pb : nullptr, s, chunk_rows);
        SG_CUDA_CHECK_LAUNCH();
        if (pdw != nullptr) launch_sum_chunks(pw, chunks, D, pdw);
        if (pdb != nullptr) launch_sum_chunks(pb, chunks, D, pdb);
        SG_CUDA_CHECK_LAUNCH();
      }
    }
  });
  return true;
}

}  // namespace sg::cuda
