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

using bf16::Pair;

// A register tile of R rows of c by V registers of 16 columns: R x V sums and V registers of b's
// pairs, of the 32. The wide one for most products; the narrow one for at most 32 columns (the
// tiny model's layers), which would leave half of the wide one's columns empty.
template <int64_t R, int64_t V>
struct Tile {
  static constexpr int64_t kRows = R, kVectors = V, kCols = 16 * V;
};
using WideTile = Tile<6, 4>;
using NarrowTile = Tile<12, 2>;

// The blocks of the depth (pairs of k) and of the rows: a block of a (144 rows x 512 pairs, 288 KB)
// stays in the second-level cache (1 MB on Zen 4) while the panels of b stream past it, each panel
// (512 x 64 pairs, 128 KB) read by the 24 tiles of the block in turn; c is read and written once
// per block of the depth. Timed on one core (bench_matmul --bf16, a shared machine, indicative):
// depth blocks of 64, 128, 256 and 1024 pairs and row blocks of 48, 72 and 288 were no faster,
// and a tile of 6 x 4 registers faster than 8 x 3 or 14 x 2 (bench/NOTES.md).
constexpr int64_t kDepthBlock = 512;
constexpr int64_t kRowBlock = 144;
// Products below this many multiply-adds decline (bf16_gemm_fits); a single product of at least
// kMinThreadedWork is cut into blocks over the pool.
constexpr double kMinWork = 32.0 * 32 * 32;
constexpr double kMinThreadedWork = 4e6;
// A large product's blocks are few and of equal cost, and each runs for a long time: up to 16 to a
// thread rather than the pool's usual 4 (parallel.h), so that the last one, which the job waits
// for, is short. Measured on Zen 5 (2 threads, alternating): the annotated bf16 step about 5%
// faster, medium about 1% (bench/NOTES.md).
constexpr int64_t kChunksPerThread = 16;

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

// One product's operands, packed: b in panels of Tile::kCols columns, each panel `pairs` pairs of
// k deep; a in rows of pairs where its rows are contiguous along k (a_rows: pack_rows), else in
// panels of Tile::kRows rows. Either way a's rows [i, i + kRows) start at a + i * pairs.
struct Packed {
  const Pair* a;
  const Pair* b;
  int64_t M, N, pairs;
  bool a_rows;
};

// Whether a is packed as rows of pairs (bf16::pack_rows): each of its rows contiguous along k.
bool a_in_rows(const StridedMatrices& ma) { return ma.col_stride == 1; }

int64_t panels(int64_t n, int64_t width) { return (n + width - 1) / width; }

// Packs panels [first, last) of the a panels followed by the b panels.
template <typename Tile>
void pack_panels(const float* a, const float* b, const StridedMatrices& ma,
                 const StridedMatrices& mb, int64_t M, int64_t N, int64_t K, Pair* pa, Pair* pb,
                 int64_t first, int64_t last) {
  constexpr int64_t R = Tile::kRows, C = Tile::kCols;
  const int64_t pairs = (K + 1) / 2, a_panels = panels(M, R);
  for (int64_t panel = first; panel < last; ++panel) {
    const int64_t r = panel * R;  // a's first row in this panel, packed from pa + r * pairs
    if (panel < a_panels && a_in_rows(ma)) {
      bf16::pack_rows<R>(a + r * ma.row_stride, ma.row_stride, std::min(R, M - r), K,
                         pa + r * pairs);
    } else if (panel < a_panels && ma.row_stride == 1) {  // a transposed: 48 rows at a time
      const int64_t count = std::min({48 / R, last - panel, a_panels - panel});
      bf16::pack_transposed_panels<R>(a + r, ma.col_stride, M - r, K, count, pa + r * pairs);
      panel += count - 1;
    } else if (panel < a_panels) {
      bf16::pack_panel<R>(a + r * ma.row_stride, ma.row_stride, ma.col_stride, std::min(R, M - r),
                          K, pa + r * pairs);
    } else {
      const int64_t j = (panel - a_panels) * C;
      bf16::pack_panel<C>(b + j * mb.col_stride, mb.col_stride, mb.row_stride, std::min(C, N - j),
                          K, pb + (panel - a_panels) * pairs * C);
    }
  }
}

// The tiles of c's rows [r0, r1) and columns [c0, c1) (r0 a multiple of the tile's rows, c0 of its
// columns), the depth a block at a time. Each sum runs over k in one order, whatever the block.
template <typename Tile>
void tiles(const Packed& p, float* c, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
           bool accumulate) {
  constexpr int64_t R = Tile::kRows, C = Tile::kCols;
  static_assert(kRowBlock % R == 0, "a block of rows holds whole tiles");
  for (int64_t p0 = 0; p0 < p.pairs; p0 += kDepthBlock) {
    const int64_t depth = std::min(kDepthBlock, p.pairs - p0);
    const bool load_c = accumulate || p0 > 0;
    for (int64_t i0 = r0; i0 < r1; i0 += kRowBlock) {
      const int64_t i1 = std::min(r1, i0 + kRowBlock);
      for (int64_t j = c0; j < c1; j += C) {
        const Pair* b_panel = p.b + (j / C) * p.pairs * C + p0 * C;
        for (int64_t i = i0; i < i1; i += R) {
          float* c_tile = c + i * p.N + j;
          const int64_t rows = std::min(R, p.M - i), cols = std::min(C, p.N - j);
          if (p.a_rows) {
            bf16::tile<R, Tile::kVectors, 1>(depth, p.a + i * p.pairs + p0, p.pairs, b_panel,
                                             c_tile, p.N, rows, cols, load_c);
          } else {
            bf16::tile<R, Tile::kVectors, R>(depth, p.a + i * p.pairs + p0 * R, 1, b_panel, c_tile,
                                             p.N, rows, cols, load_c);
          }
        }
      }
    }
  }
}

// One large product over the pool: both operands packed in parallel, then c in blocks of rows (or
// of columns, where it is wider than tall) fixed by the shape.
template <typename Tile>
void large_product(int64_t M, int64_t N, int64_t K, const float* a, const StridedMatrices& ma,
                   const float* b, const StridedMatrices& mb, float* c, bool accumulate) {
  constexpr int64_t R = Tile::kRows, C = Tile::kCols;
  const int64_t pairs = (K + 1) / 2, a_panels = panels(M, R), b_panels = panels(N, C);
  Pair* pa = scratch_a.get(a_panels * pairs * R);
  Pair* pb = scratch_b.get(b_panels * pairs * C);
  // A grain of panels is about kParallelGrain pairs.
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (pairs * C));
  parallel_for(
      a_panels + b_panels, grain,
      [&](int64_t lo, int64_t hi) { pack_panels<Tile>(a, b, ma, mb, M, N, K, pa, pb, lo, hi); },
      kChunksPerThread);
  const Packed packed{pa, pb, M, N, pairs, a_in_rows(ma)};
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const bool by_rows = a_panels >= b_panels;
  const int64_t units = by_rows ? a_panels : b_panels;
  const int64_t parts = std::min(fixed_blocks(work, kMinThreadedWork / 2), units);
  parallel_for(
      parts, 1,
      [&](int64_t lo, int64_t hi) {
        for (int64_t part = lo; part < hi; ++part) {
          const int64_t first = units * part / parts, last = units * (part + 1) / parts;
          if (by_rows) {
            tiles<Tile>(packed, c, first * R, std::min(M, last * R), 0, N, accumulate);
          } else {
            tiles<Tile>(packed, c, 0, M, first * C, std::min(N, last * C), accumulate);
          }
        }
      },
      kChunksPerThread);
}

// One product on the calling thread, packed into its own scratch.
template <typename Tile>
void small_product(int64_t M, int64_t N, int64_t K, const float* a, const StridedMatrices& ma,
                   const float* b, const StridedMatrices& mb, float* c, bool accumulate) {
  constexpr int64_t R = Tile::kRows, C = Tile::kCols;
  const int64_t pairs = (K + 1) / 2, a_panels = panels(M, R), b_panels = panels(N, C);
  Pair* pa = scratch_a.get(a_panels * pairs * R);
  Pair* pb = scratch_b.get(b_panels * pairs * C);
  pack_panels<Tile>(a, b, ma, mb, M, N, K, pa, pb, 0, a_panels + b_panels);
  tiles<Tile>(Packed{pa, pb, M, N, pairs, a_in_rows(ma)}, c, 0, M, 0, N, accumulate);
}

// The whole batch with one tile shape.
template <typename Tile>
void products(int64_t batch, int64_t M, int64_t N, int64_t K, const StridedMatrices& a,
              const StridedMatrices& b, float* c, bool accumulate) {
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  if (work >= kMinThreadedWork) {  // each product over the pool in turn
    for (int64_t i = 0; i < batch; ++i) {
      large_product<Tile>(M, N, K, a.data + i * a.batch_stride, a, b.data + i * b.batch_stride, b,
                          c + i * M * N, accumulate);
    }
    return;
  }
  // The products of the batch over the pool, each on one thread.
  const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kMinThreadedWork / 8 / work));
  parallel_for(batch, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      small_product<Tile>(M, N, K, a.data + i * a.batch_stride, a, b.data + i * b.batch_stride, b,
                          c + i * M * N, accumulate);
    }
  });
}

}  // namespace

bool bf16_gemm_available() { return cpu_features() >= CpuFeatures::Avx512Bf16; }

bool bf16_gemm_fits(int64_t M, int64_t N, int64_t K) {
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  return M >= 2 && N > 16 && K >= 2 && work >= kMinWork && bf16_gemm_available();
}

void bf16_gemm(int64_t batch, int64_t M, int64_t N, int64_t K, StridedMatrices a, StridedMatrices b,
               float* c, bool accumulate) {
  SG_CHECK(bf16_gemm_available(), "bf16_gemm: this CPU (or the cap) has no AVX512-BF16");
  SG_CHECK(M >= 1 && N >= 1 && K >= 1, "bf16_gemm: empty product [{}, {}]·[{}, {}]", M, K, K, N);
  if (N <= NarrowTile::kCols) return products<NarrowTile>(batch, M, N, K, a, b, c, accumulate);
  products<WideTile>(batch, M, N, K, a, b, c, accumulate);
}

#else  // no AVX512-BF16 kernel in this build: the reference rounds and multiplies in float32

bool bf16_gemm_available() { return false; }
bool bf16_gemm_fits(int64_t, int64_t, int64_t) { return false; }

void bf16_gemm(int64_t, int64_t, int64_t, int64_t, StridedMatrices, StridedMatrices, float*, bool) {
  SG_FAIL("bf16_gemm: this build has no AVX512-BF16 kernel (bf16_gemm_fits is always false)");
}

#endif

}  // namespace sg::cpu
