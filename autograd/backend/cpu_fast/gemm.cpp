// The fast matrix multiply. The reference (backend/cpu/gemm.cpp) makes one OpenBLAS call per
// product; here small and narrow products take our own kernels (tiny_gemm.h, narrow_gemm.h), a
// transposed operand of small products is packed into rows first, a batch of small products is
// spread over the thread pool, and a single product of any size past a few hundred kFLOP is cut
// into blocks over it, the same blocks whatever the thread count (split_gemm).

#include <algorithm>
#include <climits>
#include <vector>

#include "autograd/backend/blas_matrix.h"
#include "autograd/backend/cpu/blas_library.h"
#include "autograd/backend/cpu_fast/bf16_gemm.h"
#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/backend/cpu_fast/narrow_gemm.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/backend/cpu_fast/tiny_gemm.h"
#include "autograd/backend/cpu_fast/transpose.h"
#include "autograd/blas.h"
#include "autograd/factory.h"

namespace sg::cpu {

namespace {

// Small products. OpenBLAS spends a fixed time per call before any arithmetic (argument checks,
// buffer set-up, picking a kernel), and its small-matrix kernels are much slower when an operand
// is transposed (measurements: bench/NOTES.md). Attention makes hundreds of tiny products per
// matmul ([10, 8]·[8, 10] per head and sequence in the tiny config), so:
//   - one row times a matrix (a decoding step: one query) is a plain loop here, several times
//   faster;
//   - a transposed operand of a batched product is first copied into rows where its matrices
//     are tiny, and OpenBLAS then multiplies untransposed matrices, faster (bench_kernels);
//     also where narrow_gemm then takes the products (a transposed b over >= 32 rows of a).
constexpr int64_t kPackElements = 256;  // bigger ones: OpenBLAS reads them faster in place
constexpr int64_t kPackedRows = 32;     // ...unless narrow_gemm takes them, over this many rows

template <typename T>
void row_times_matrix(const T* a, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c,
                      int64_t N, int64_t K, bool accumulate) {
  if (b_cs == 1) {  // c (+)= sum over k of a[k] * b[k, :]
    if (!accumulate) std::fill(c, c + N, T(0));
    for (int64_t k = 0; k < K; ++k) {
      const T ak = a[k * a_cs];
      const T* bk = b + k * b_rs;
#pragma omp simd
      for (int64_t j = 0; j < N; ++j) c[j] += ak * bk[j];
    }
    return;
  }
  for (int64_t j = 0; j < N; ++j) {  // b transposed: dot products
    T acc = 0;
    for (int64_t k = 0; k < K; ++k) acc += a[k * a_cs] * b[k * b_rs + j * b_cs];
    c[j] = accumulate ? c[j] + acc : acc;
  }
}

// Copies rows x cols of a transposed BLAS matrix (stored [cols, rows], rows ld apart) into `dst`
// as plain rows.
template <typename T>
void pack_rows(const T* src, int64_t ld, int64_t rows, int64_t cols, T* dst) {
  if constexpr (std::is_same_v<T, float>) {
    transpose_into_rows(src, ld, cols, rows, 1.0f, dst, cols);
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = src[c * ld + r];
    }
  }
}

// Every product here runs on one OpenBLAS thread: the threads are ours (parallel.h), and how a
// product is cut between them depends on its shape alone (split_gemm), so that its bits do not
// depend on the thread count. OpenBLAS's own threads cut a product by the number of threads.
// Products of at least kMinThreadedFlops are large: cut into at least two BLAS calls, and into
// more only as long as each call keeps kMinLargeBlockFlops. Every call packs the whole of the
// operand it does not cut (OpenBLAS copies it into its panels), so small blocks of a large
// product pay that copy many times: annotated's h·W2ᵀ, [800, 2048]·[2048, 512], ran at 120
// GFLOP/s in 16 blocks of 50 rows and at 170 in 4 (bench/NOTES.md). The price: a product of
// 1.7 GFLOP is cut in 4 blocks, so more than 4 threads do not speed it up.
constexpr double kMinThreadedFlops = 16e6;
constexpr double kMinLargeBlockFlops = 256e6;

// Sets OpenBLAS to one thread for a scope (and back).
class OneBlasThread {
 public:
  OneBlasThread() : saved_(blas_threads()) {
    if (saved_ > 1) set_blas_threads(1);
  }
  ~OneBlasThread() {
    if (saved_ > 1) set_blas_threads(saved_);
  }
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;

 private:
  int saved_;
};

// Products of `work` multiply-adds each that make one grain of the thread pool (parallel.h).
int64_t products_per_grain(int64_t work) {
  return std::max<int64_t>(1, kParallelGrain * 8 / std::max<int64_t>(work, 1));
}

template <typename T>
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t M, int64_t N, int64_t K, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), 1.0f, a, int(lda), b, int(ldb), beta,
                c, int(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, int(M), int(N), int(K), 1.0, a, int(lda), b, int(ldb), beta,
                c, int(ldc));
  }
}

// One product c = a·b + beta·c on the calling thread: a float product with a narrow output and b
// in rows goes to narrow_gemm (about twice OpenBLAS's speed there), everything else to OpenBLAS.
template <typename T>
void one_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t M, int64_t N, int64_t K, const T* a,
              int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (tb == CblasNoTrans && narrow_gemm_fits(M, N, K)) {
      const bool a_in_rows = ta == CblasNoTrans;
      return narrow_gemm(M, N, K, a, a_in_rows ? lda : 1, a_in_rows ? 1 : lda, b, ldb,
                         /*bias=*/nullptr, c, ldc, /*accumulate=*/beta != 0.0f);
    }
  }
  blas_gemm(ta, tb, M, N, K, a, lda, b, ldb, beta, c, ldc);
}

// A single product of at least 2 x kMinSplitFlops (parallel.h) is cut into blocks over our pool
// (split_gemm), each block one call on one thread: mid-sized ones because OpenBLAS's threads cost
// more than they save there; large ones because the pool's workers are already awake, a worker
// slow to start costs nothing (the caller takes its blocks), and OpenBLAS's threads wait for each
// other (bench/NOTES.md has the measurements). The number of blocks comes from the shape alone
// (Note [Blocks fixed by the shape] in parallel.h), so one thread computes the same blocks as
// two: the bits do not depend on the thread count, whatever the BLAS's kernels.

// How split_gemm may cut a product and compute its blocks. A mid-sized one: into partial sums
// where it sums over many rows, each block through one_gemm (narrow_gemm where the block fits). A
// large one: by rows or columns only, each block one BLAS call (fewer, larger calls; a partial
// sum of a large product would cost a pass over its output).
enum class SplitRules { kMidSized, kLarge };

// The operands of a batch of products c[i] = a[i]·b[i] + beta·c[i], as OpenBLAS takes them.
template <typename T>
struct GemmOperands {
  CBLAS_TRANSPOSE ta, tb;
  int64_t M, N, K;
  const T* a;
  int64_t lda, a_batch_stride;
  const T* b;
  int64_t ldb, b_batch_stride;
  T beta;
  T* c;  // the products' outputs, contiguous: c[i] is M x N at c + i·M·N
};

// Every product of the batch cut into `parts` blocks, all batch x parts blocks spread over the
// pool: when the rules allow and a product sums over many rows (a weight gradient, xᵀ·g), each
// block sums its own share of the rows into a partial product and the partials are added in
// block order; otherwise the rows of a and c are cut, or the columns of b and c.
template <typename T>
void split_gemm(const GemmOperands<T>& g, int64_t batch, int64_t parts, SplitRules rules) {
  const auto block_gemm = rules == SplitRules::kLarge ? &blas_gemm<T> : &one_gemm<T>;
  const int64_t M = g.M, N = g.N, K = g.K;
  enum class Cut {
    kRows,
    kColumns,
    kSum
  } cut = rules == SplitRules::kMidSized && batch == 1 && K >= 4 * std::max(M, N) ? Cut::kSum
          : M >= N                                                                ? Cut::kRows
                                                                                  : Cut::kColumns;
  const int64_t length = cut == Cut::kSum ? K : cut == Cut::kRows ? M : N;
  parts = std::min(parts, length);  // no empty block (still the shape's alone)
  std::vector<T> partials(cut == Cut::kSum ? (parts - 1) * M * N : 0);
  OneBlasThread one_thread;
  parallel_for(batch * parts, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t block = lo; block < hi; ++block) {
      const int64_t i = block / parts, p = block % parts;
      const int64_t first = length * p / parts, end = length * (p + 1) / parts;
      const T* a = g.a + i * g.a_batch_stride;
      const T* b = g.b + i * g.b_batch_stride;
      T* c = g.c + i * M * N;
      if (cut == Cut::kSum) {  // a's columns and b's rows [first, end); block 0 writes c itself
        const T* ap = a + first * (g.ta == CblasNoTrans ? 1 : g.lda);
        const T* bp = b + first * (g.tb == CblasNoTrans ? g.ldb : 1);
        T* cp = p == 0 ? c : partials.data() + (p - 1) * M * N;
        block_gemm(g.ta, g.tb, M, N, end - first, ap, g.lda, bp, g.ldb, p == 0 ? g.beta : T(0), cp,
                   N);
      } else if (cut == Cut::kRows) {  // rows [first, end) of a and c
        const T* ap = a + first * (g.ta == CblasNoTrans ? g.lda : 1);
        block_gemm(g.ta, g.tb, end - first, N, K, ap, g.lda, b, g.ldb, g.beta, c + first * N, N);
      } else {  // columns [first, end) of b and c
        const T* bp = b + first * (g.tb == CblasNoTrans ? 1 : g.ldb);
        block_gemm(g.ta, g.tb, M, end - first, K, a, g.lda, bp, g.ldb, g.beta, c + first, N);
      }
    }
  });
  for (int64_t p = 1; p < parts && cut == Cut::kSum; ++p) {
    const T* partial = partials.data() + (p - 1) * M * N;
    for (int64_t i = 0; i < M * N; ++i) g.c[i] += partial[i];
  }
}

// The product in one of the fast ways above; false where the reference's plain BLAS calls are
// as fast (large products).
template <typename T>
bool gemm_fast(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  SG_CHECK(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX,
           "matmul: sizes M={} N={} K={} exceed what BLAS can index", M, N, K);
  if (M == 0 || N == 0 || K == 0) return false;
  if constexpr (std::is_same_v<T, float>) {
    if (tiny_gemm_fits(M, N, K)) {  // attention over short sequences: no OpenBLAS call per pair
      const StridedMatrices ma{a.data_ptr<float>(), a.stride(0), a.stride(1), a.stride(2)};
      const StridedMatrices mb{b.data_ptr<float>(), b.stride(0), b.stride(1), b.stride(2)};
      float* pc = out.data_ptr<float>();
      parallel_for(batch, products_per_grain(M * N * K), [&](int64_t lo, int64_t hi) {
        tiny_gemm(hi - lo, M, N, K,
                  {ma.data + lo * ma.batch_stride, ma.batch_stride, ma.row_stride, ma.col_stride},
                  {mb.data + lo * mb.batch_stride, mb.batch_stride, mb.row_stride, mb.col_stride},
                  pc + lo * M * N, accumulate);
      });
      return true;
    }
  }
  const BlasMatrix blas_a = as_blas_matrix(a), blas_b = as_blas_matrix(b);
  struct {  // the operands as OpenBLAS takes them; b's may become packed rows below
    CBLAS_TRANSPOSE trans;
    int64_t ld, batch_stride;
  } A{blas_a.transposed ? CblasTrans : CblasNoTrans, blas_a.ld, blas_a.batch_stride},
      B{blas_b.transposed ? CblasTrans : CblasNoTrans, blas_b.ld, blas_b.batch_stride};
  const T* pa = blas_a.data.data_ptr<T>();
  const T* pb = blas_b.data.data_ptr<T>();
  T* pc = out.data_ptr<T>();
  // A narrow float product whose b is a transposed view (a Linear layer's Wᵀ, at most 64 x K
  // floats) is copied into rows once here, for narrow_gemm and every block of split_gemm.
  std::vector<T> b_rows;
  if (std::is_same_v<T, float> && batch == 1 && M > 1 && B.trans == CblasTrans &&
      narrow_gemm_fits(M, N, K)) {
    b_rows.resize(static_cast<size_t>(K * N));
    pack_rows(pb, B.ld, K, N, b_rows.data());
    pb = b_rows.data(), B.trans = CblasNoTrans, B.ld = N;
  }
  if (M == 1) {
    const int64_t a_cs = A.trans == CblasNoTrans ? 1 : A.ld;
    const int64_t b_rs = B.trans == CblasNoTrans ? B.ld : 1;
    const int64_t b_cs = B.trans == CblasNoTrans ? 1 : B.ld;
    parallel_for(batch, products_per_grain(N * K), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        row_times_matrix(pa + i * A.batch_stride, a_cs, pb + i * B.batch_stride, b_rs, b_cs,
                         pc + i * N, N, K, accumulate);
      }
    });
    return true;
  }
  const bool pack_a = batch > 1 && A.trans == CblasTrans && M * K <= kPackElements;
  // A transposed b is also copied into rows where that lets narrow_gemm take the products and
  // the copy is spread over enough rows of a (kPackedRows): attention's q·kᵀ and its gradients
  // over 64-long sequences ([64, 32]·[32, 64]: faster than OpenBLAS, bench/NOTES.md). With
  // 10 rows (annotated's heads) the copy, one element at a time, costs more than it saves.
  const bool pack_b = batch > 1 && B.trans == CblasTrans &&
                      (K * N <= kPackElements ||
                       (std::is_same_v<T, float> && M >= kPackedRows && narrow_gemm_fits(M, N, K)));
  const double flops = 2.0 * static_cast<double>(M * N * K);
  const T beta = accumulate ? T(1) : T(0);
  const GemmOperands<T> operands{A.trans, B.trans,        M,    N, K, pa, A.ld, A.batch_stride, pb,
                                 B.ld,    B.batch_stride, beta, pc};
  const bool narrow =
      std::is_same_v<T, float> && B.trans == CblasNoTrans && narrow_gemm_fits(M, N, K);
  if (!pack_a && !pack_b && !narrow && b_rows.empty() && flops >= kMinThreadedFlops) {
    const int64_t parts = std::max<int64_t>(2, fixed_blocks(flops, kMinLargeBlockFlops));
    split_gemm(operands, batch, parts, SplitRules::kLarge);
    return true;
  }
  // Per product: the products of a batch over the pool, or one product cut into blocks (below).
  OneBlasThread one_thread;
  auto products = [&](int64_t lo, int64_t hi) {
    std::vector<T> packed((pack_a ? M * K : 0) + (pack_b ? K * N : 0));
    T* packed_a = packed.data();
    T* packed_b = packed.data() + (pack_a ? M * K : 0);
    for (int64_t i = lo; i < hi; ++i) {
      const T* ai = pa + i * A.batch_stride;
      const T* bi = pb + i * B.batch_stride;
      if (pack_a) pack_rows(ai, A.ld, M, K, packed_a);
      if (pack_b) pack_rows(bi, B.ld, K, N, packed_b);
      one_gemm(pack_a ? CblasNoTrans : A.trans, pack_b ? CblasNoTrans : B.trans, M, N, K,
               pack_a ? packed_a : ai, pack_a ? K : A.ld, pack_b ? packed_b : bi, pack_b ? N : B.ld,
               beta, pc + i * M * N, N);
    }
  };
  if (batch == 1 && flops >= 2 * kMinSplitFlops) {
    split_gemm(operands, 1, fixed_blocks(flops, kMinSplitFlops), SplitRules::kMidSized);
    return true;
  }
  // A batch of products (attention's, one per head and sequence) is split over the pool, each
  // thread calling OpenBLAS on its own.
  parallel_for(batch, products_per_grain(M * N * K), products);
  return true;
}

}  // namespace

void FastCpuBackend::gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  choose_fast_blas_once();
  const bool done = dispatch_floating(
      "matmul", out.dtype(), [&]<typename T>() { return gemm_fast<T>(a, b, out, accumulate); });
  if (!done) {
    quiet_workers();  // the BLAS's threads are about to want every core
    CpuBackend::gemm(a, b, out, accumulate);
  }
}

// Autocast's products: the AVX512-BF16 kernel where the CPU has it and the product is large enough
// to pay for packing; elsewhere the reference, which rounds the operands and calls gemm above.
void FastCpuBackend::gemm_bfloat16(const Tensor& a, const Tensor& b, const Tensor& out,
                                   bool accumulate) {
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  const bool float32 = a.dtype() == kFloat32 && b.dtype() == kFloat32 && out.dtype() == kFloat32;
  if (!float32 || !bf16_gemm_fits(M, N, K)) return CpuBackend::gemm_bfloat16(a, b, out, accumulate);
  bf16_gemm(batch, M, N, K, {a.data_ptr<float>(), a.stride(0), a.stride(1), a.stride(2)},
            {b.data_ptr<float>(), b.stride(0), b.stride(1), b.stride(2)}, out.data_ptr<float>(),
            accumulate);
}

}  // namespace sg::cpu
