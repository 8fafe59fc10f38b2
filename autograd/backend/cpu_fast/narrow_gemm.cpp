// narrow_gemm (narrow_gemm.h): only the functions marked SG_AVX512 contain AVX-512 instructions,
// and narrow_gemm_fits checks the CPU before anything calls them.
#include "autograd/backend/cpu_fast/narrow_gemm.h"

#include <array>
#include <utility>

#include "autograd/backend/cpu_fast/avx512_rows.h"
#include "autograd/error.h"

namespace sg::cpu {

#ifdef SG_AVX512_ROWS

namespace {

using avx512::RowLanes;

constexpr int kMaxVectors = 4;  // N <= 64: a row of c is at most 4 registers
// Rows per tile for V registers per row: R x V accumulators, V rows of b and one broadcast must
// fit the 32 registers; 16 rows for V = 1 already hide the FMA latency many times over.
constexpr std::array<int, kMaxVectors> kMaxTileRows = {16, 14, 9, 6};

// c[R rows] (+)= bias + a[R rows]·b for one tile: R x V sums kept in registers while k runs.
template <int R, int V>
[[SG_AVX512]] void tile(const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t b_rs,
                        RowLanes<V> lanes, int64_t K, const float* bias, float* c, int64_t ldc,
                        bool accumulate) {
  __m512 start[V];  // every row's sums start at the bias, or at zero
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    start[v] = bias != nullptr ? _mm512_maskz_loadu_ps(lanes.lanes[v], bias + 16 * v)
                               : _mm512_setzero_ps();
  }
  __m512 sum[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) sum[r][v] = start[v];
  }
  for (int64_t k = 0; k < K; ++k) {
    __m512 b_row[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      b_row[v] = _mm512_maskz_loadu_ps(lanes.lanes[v], b + k * b_rs + 16 * v);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 a_rk = _mm512_set1_ps(a[r * a_rs + k * a_cs]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) sum[r][v] = _mm512_fmadd_ps(a_rk, b_row[v], sum[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      float* c_rv = c + r * ldc + 16 * v;
      if (accumulate)
        sum[r][v] = _mm512_add_ps(sum[r][v], _mm512_maskz_loadu_ps(lanes.lanes[v], c_rv));
      _mm512_mask_storeu_ps(c_rv, lanes.lanes[v], sum[r][v]);
    }
  }
}

// Every row of a and c in tiles of at most kMaxTileRows[V - 1] rows, as even as they can be (800
// rows of 2 registers: 23 tiles of 14 and 6 of 13, not 57 of 14 and one of 2).
template <int V>
[[SG_AVX512]] void rows_in_tiles(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_rs,
                                 int64_t a_cs, const float* b, int64_t b_rs, const float* bias,
                                 float* c, int64_t ldc, bool accumulate) {
  using TileOfV = void (*)(const float*, int64_t, int64_t, const float*, int64_t, RowLanes<V>,
                           int64_t, const float*, float*, int64_t, bool);
  constexpr int kRows = kMaxTileRows[V - 1];
  static constexpr auto kTiles = []<size_t... I>(std::index_sequence<I...>) {
    return std::array<TileOfV, kRows>{tile<static_cast<int>(I) + 1, V>...};
  }
  (std::make_index_sequence<kRows>{});
  const RowLanes<V> lanes(N);
  const int64_t tiles = (M + kRows - 1) / kRows, rows = M / tiles, longer = M % tiles;
  for (int64_t t = 0, m = 0; t < tiles; ++t) {
    const int64_t R = rows + (t < longer ? 1 : 0);
    kTiles[static_cast<size_t>(R - 1)](a + m * a_rs, a_rs, a_cs, b, b_rs, lanes, K, bias,
                                       c + m * ldc, ldc, accumulate);
    m += R;
  }
}

}  // namespace

bool narrow_gemm_fits(int64_t M, int64_t N, int64_t K) {
  // b's rows (K x N floats) are read once per tile: from L1/L2 when the depth is small, and when
  // the depth is long (a weight gradient over every row) there are few tiles (M <= 64).
  return N >= 1 && N <= 16 * kMaxVectors && M >= 1 && K >= 1 && (K <= 512 || M <= 64) &&
         avx512::cpu_has_avx512();
}

void narrow_gemm(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_rs, int64_t a_cs,
                 const float* b, int64_t b_rs, const float* bias, float* c, int64_t ldc,
                 bool accumulate) {
  SG_CHECK(N >= 1 && N <= 16 * kMaxVectors && M >= 1 && K >= 1,
           "narrow_gemm: [{}, {}]·[{}, {}] is outside the kernel's shapes (N from 1 to {})", M, K,
           K, N, 16 * kMaxVectors);
  avx512::with_registers_per_row(N, [&]<int V>() {
    rows_in_tiles<V>(M, N, K, a, a_rs, a_cs, b, b_rs, bias, c, ldc, accumulate);
  });
}

#else  // no AVX-512 kernel in this build: OpenBLAS does every product

bool narrow_gemm_fits(int64_t, int64_t, int64_t) { return false; }

void narrow_gemm(int64_t, int64_t, int64_t, const float*, int64_t, int64_t, const float*, int64_t,
                 const float*, float*, int64_t, bool) {
  SG_FAIL("narrow_gemm: this build has no AVX-512 kernel (narrow_gemm_fits is always false)");
}

#endif

}  // namespace sg::cpu
