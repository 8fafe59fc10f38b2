// bf16_gemm (bf16_gemm.h): packing both operands into panels of bfloat16 pairs, then the tiles of
// c over the thread pool. The AVX-512 code is in bf16_tile.h, in functions marked gnu::target, so
// this file compiles like every other kernel; bf16_gemm_fits checks the CPU before anything calls
// them.
#include "autograd/backend/cpu_fast/bf16_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <new>

#include "autograd/backend/cpu_fast/bf16_tile.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "autograd/cpu_features.h"
#include "autograd/error.h"

namespace sg::cpu {

#ifdef SG_BF16_TILE

namespace {

using bf16::kCols;
using bf16::kRows;
using bf16::Pair;

// Pairs of k per block of the depth: a panel of b for one block (kDepthBlock x kCols pairs, 32 KB)
// stays in the first-level cache while the tiles of the rows take it in turn, and a panel of a
// (kRowBlock rows of it, 72 KB) in the second.
constexpr int64_t kDepthBlock = 128;
constexpr int64_t kRowBlock = 144;
// Products below this many multiply-adds decline (bf16_gemm_fits); a single product of at least
// kMinThreadedWork is cut into blocks over the pool.
constexpr double kMinWork = 32.0 * 32 * 32;
constexpr double kMinThreadedWork = 4e6;

// Scratch memory of one thread, 64-byte aligned, kept and grown as needed: packing a product's
// operands then costs no allocation after the first products of a program.
class Scratch {
 public:
  ~Scratch() { std::free(data_); }
  Pair* get(int64_t pairs) {
    const auto bytes = static_cast<size_t>(pairs) * sizeof(Pair);
    if (bytes > capacity_) {
      std::free(data_);
      capacity_ = (bytes + 63) / 64 * 64;
      data_ = static_cast<Pair*>(std::aligned_alloc(64, capacity_));
      if (data_ == nullptr) throw std::bad_alloc();
    }
    return data_;
  }

 private:
  Pair* data_ = nullptr;
  size_t capacity_ = 0;
};

thread_local Scratch scratch_a, scratch_b;

// One product's operands, packed: a in panels of kRows rows, b in panels of kCols columns, each
// panel `pairs` pairs of k deep.
struct Packed {
  const Pair* a;
  const Pair* b;
  int64_t M, N, pairs;
};

int64_t panels(int64_t n, int64_t width) { return (n + width - 1) / width; }

// Packs panels [first, last) of the a panels followed by the b panels.
void pack_panels(const float* a, const float* b, const StridedMatrices& ma,
                 const StridedMatrices& mb, int64_t M, int64_t N, int64_t K, Pair* pa, Pair* pb,
                 int64_t first, int64_t last) {
  const int64_t pairs = (K + 1) / 2, a_panels = panels(M, kRows);
  for (int64_t panel = first; panel < last; ++panel) {
    if (panel < a_panels) {
      const int64_t r = panel * kRows;
      bf16::pack_panel<kRows>(a + r * ma.row_stride, ma.row_stride, ma.col_stride,
                              std::min(kRows, M - r), K, pa + panel * pairs * kRows);
    } else {
      const int64_t j = (panel - a_panels) * kCols;
      bf16::pack_panel<kCols>(b + j * mb.col_stride, mb.col_stride, mb.row_stride,
                              std::min<int64_t>(kCols, N - j), K,
                              pb + (panel - a_panels) * pairs * kCols);
    }
  }
}

// The tiles of c's rows [r0, r1) and columns [c0, c1) (r0 a multiple of kRows, c0 of kCols), the
// depth a block at a time. Each sum runs over k in one order, whatever the block.
void tiles(const Packed& p, float* c, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
           bool accumulate) {
  for (int64_t p0 = 0; p0 < p.pairs; p0 += kDepthBlock) {
    const int64_t depth = std::min(kDepthBlock, p.pairs - p0);
    const bool load_c = accumulate || p0 > 0;
    for (int64_t i0 = r0; i0 < r1; i0 += kRowBlock) {
      const int64_t i1 = std::min(r1, i0 + kRowBlock);
      for (int64_t j = c0; j < c1; j += kCols) {
        const Pair* b_panel = p.b + (j / kCols) * p.pairs * kCols + p0 * kCols;
        for (int64_t i = i0; i < i1; i += kRows) {
          const Pair* a_panel = p.a + (i / kRows) * p.pairs * kRows + p0 * kRows;
          bf16::tile<kRows, bf16::kVectors>(depth, a_panel, b_panel, c + i * p.N + j, p.N,
                                            std::min(kRows, p.M - i), std::min(kCols, p.N - j),
                                            load_c);
        }
      }
    }
  }
}

// One large product over the pool: both operands packed in parallel, then c in blocks of rows (or
// of columns, where it is wider than tall) fixed by the shape.
void large_product(int64_t M, int64_t N, int64_t K, const float* a, const StridedMatrices& ma,
                   const float* b, const StridedMatrices& mb, float* c, bool accumulate) {
  const int64_t pairs = (K + 1) / 2, a_panels = panels(M, kRows), b_panels = panels(N, kCols);
  Pair* pa = scratch_a.get(a_panels * pairs * kRows);
  Pair* pb = scratch_b.get(b_panels * pairs * kCols);
  // A grain of panels is about kParallelGrain pairs.
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (pairs * kCols));
  parallel_for(a_panels + b_panels, grain,
               [&](int64_t lo, int64_t hi) { pack_panels(a, b, ma, mb, M, N, K, pa, pb, lo, hi); });
  const Packed packed{pa, pb, M, N, pairs};
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const bool by_rows = a_panels >= b_panels;
  const int64_t units = by_rows ? a_panels : b_panels;
  const int64_t parts = std::min(fixed_blocks(work, kMinThreadedWork / 2), units);
  parallel_for(parts, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t part = lo; part < hi; ++part) {
      const int64_t first = units * part / parts, last = units * (part + 1) / parts;
      if (by_rows) {
        tiles(packed, c, first * kRows, std::min(M, last * kRows), 0, N, accumulate);
      } else {
        tiles(packed, c, 0, M, first * kCols, std::min(N, last * kCols), accumulate);
      }
    }
  });
}

// One product on the calling thread, packed into its own scratch.
void small_product(int64_t M, int64_t N, int64_t K, const float* a, const StridedMatrices& ma,
                   const float* b, const StridedMatrices& mb, float* c, bool accumulate) {
  const int64_t pairs = (K + 1) / 2, a_panels = panels(M, kRows), b_panels = panels(N, kCols);
  Pair* pa = scratch_a.get(a_panels * pairs * kRows);
  Pair* pb = scratch_b.get(b_panels * pairs * kCols);
  pack_panels(a, b, ma, mb, M, N, K, pa, pb, 0, a_panels + b_panels);
  tiles(Packed{pa, pb, M, N, pairs}, c, 0, M, 0, N, accumulate);
}

}  // namespace

bool bf16_gemm_available() { return cpu_features() >= CpuFeatures::Avx512Bf16; }

bool bf16_gemm_fits(int64_t M, int64_t N, int64_t K) {
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  return M >= 2 && N >= 2 && K >= 2 && work >= kMinWork && bf16_gemm_available();
}

void bf16_gemm(int64_t batch, int64_t M, int64_t N, int64_t K, StridedMatrices a, StridedMatrices b,
               float* c, bool accumulate) {
  SG_CHECK(bf16_gemm_available(), "bf16_gemm: this CPU (or the cap) has no AVX512-BF16");
  SG_CHECK(M >= 1 && N >= 1 && K >= 1, "bf16_gemm: empty product [{}, {}]·[{}, {}]", M, K, K, N);
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (work >= kMinThreadedWork) {  // each product over the pool in turn
    for (int64_t i = 0; i < batch; ++i) {
      large_product(M, N, K, a.data + i * a.batch_stride, a, b.data + i * b.batch_stride, b,
                    c + i * M * N, accumulate);
    }
    return;
  }
  // The products of the batch over the pool, each on one thread.
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kMinThreadedWork / 8 / work));
  parallel_for(batch, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      small_product(M, N, K, a.data + i * a.batch_stride, a, b.data + i * b.batch_stride, b,
                    c + i * M * N, accumulate);
    }
  });
}

#else  // no AVX512-BF16 kernel in this build: the reference rounds and multiplies in float32

bool bf16_gemm_available() { return false; }
bool bf16_gemm_fits(int64_t, int64_t, int64_t) { return false; }

void bf16_gemm(int64_t, int64_t, int64_t, int64_t, StridedMatrices, StridedMatrices, float*, bool) {
  SG_FAIL("bf16_gemm: this build has no AVX512-BF16 kernel (bf16_gemm_fits is always false)");
}

#endif

}  // namespace sg::cpu
