// The machine's measured float32 FMA peak: the ceiling a matrix product can reach on these cores,
// so that a product's GFLOP/s can be read as a share of what the hardware does; and, where the CPU
// has AVX512-BF16, the bfloat16 peak of vdpbf16ps, the ceiling of autocast's products
// (backend/cpu_fast/bf16_gemm.h).
//
// Each thread runs independent fused multiply-adds on registers only (no memory traffic), with
// enough accumulators in flight to cover the FMA latency on every FMA port: AVX-512 (16 lanes)
// where the CPU has it, else AVX2 + FMA (8 lanes), else scalar code the compiler vectorizes as it
// can. An FMA is two floating-point operations; a vdpbf16ps is 32 of them (16 lanes, a pair of
// bfloat16 products each). Threads run at once; the best of several trials is reported, because
// on a shared machine a neighbour only ever slows a trial down.
//
//   ./build/bench/fma_peak [--threads N] [--json FILE]
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

constexpr int64_t kIterations = 20'000'000;  // per thread and trial: a few hundred milliseconds

// Twelve accumulators: FMA latency (4 cycles) times two FMA ports is eight in flight at least.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) double fma_loop_avx512(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  alignas(64) float lanes[16];
  float sum = 0;
  for (int i = 0; i < 12; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    for (float x : lanes) sum += x;
  }
  return sum;  // used, so the loop is not optimized away
}

// The same with vdpbf16ps: each instruction adds two bfloat16 products to each of its 16 sums.
__attribute__((target("avx512f,avx512bf16"))) double dpbf16_loop(int64_t iterations) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999f), _mm512_set1_ps(0.999f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7f), _mm512_set1_ps(1e-7f));
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  alignas(64) float lanes[16];
  float sum = 0;
  for (int i = 0; i < 12; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    for (float x : lanes) sum += x;
  }
  return sum;
}

__attribute__((target("avx2,fma"))) double fma_loop_avx2(int64_t iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  alignas(32) float lanes[8];
  float sum = 0;
  for (int i = 0; i < 12; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    for (float x : lanes) sum += x;
  }
  return sum;
}
#endif

double fma_loop_scalar(int64_t iterations) {
  float acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = static_cast<float>(i);
  for (int64_t it = 0; it < iterations; ++it) {
    for (float& x : acc) x = x * 0.999999f + 1e-7f;
  }
  float sum = 0;
  for (float x : acc) sum += x;
  return sum;
}

struct Kernel {
  std::string_view name;
  int lanes;  // multiply-adds per instruction: float32 lanes, or 32 for vdpbf16ps
  double (*loop)(int64_t);
};

// vdpbf16ps where the CPU has it (name empty: it does not).
Kernel bf16_kernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) return {"avx512_bf16", 32, dpbf16_loop};
#endif
  return {"", 0, nullptr};
}

Kernel best_kernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512f", 16, fma_loop_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {"avx2+fma", 8, fma_loop_avx2};
  }
#endif
  return {"scalar", 1, fma_loop_scalar};
}

// GFLOP/s of `threads` threads running the loop at once.
double trial(const Kernel& kernel, int threads) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> sinks(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) {
      }
      sinks[static_cast<size_t>(t)] = kernel.loop(kIterations);
    });
  }
  while (ready.load() < threads) {
  }
  const auto t0 = std::chrono::steady_clock::now();
  go.store(true);
  for (auto& th : pool) th.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  volatile double sink = 0;
  for (double s : sinks) sink = sink + s;
  const double flops = 2.0 * 12 * kernel.lanes * static_cast<double>(kIterations) * threads;
  return flops / seconds * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      fmt::print(stderr, "usage: fma_peak [--threads N] [--json FILE]\n");
      return 2;
    }
  }
  if (threads < 1) {
    fmt::print(stderr, "fma_peak: --threads must be at least 1, not {}\n", threads);
    return 2;
  }
  const Kernel kernel = best_kernel();
  double best_one = 0, best_all = 0;
  for (int t = 0; t < 5; ++t) {
    best_one = std::max(best_one, trial(kernel, 1));
    best_all = std::max(best_all, trial(kernel, threads));
  }
  fmt::print("FMA peak ({}, float32): {:.1f} GFLOP/s on 1 thread, {:.1f} GFLOP/s on {} threads\n",
             kernel.name, best_one, best_all, threads);
  const Kernel bf16 = bf16_kernel();
  double bf16_one = 0, bf16_all = 0;
  if (bf16.loop != nullptr) {
    for (int t = 0; t < 5; ++t) {
      bf16_one = std::max(bf16_one, trial(bf16, 1));
      bf16_all = std::max(bf16_all, trial(bf16, threads));
    }
    fmt::print(
        "vdpbf16ps peak (avx512_bf16, bfloat16 products, float32 sums): {:.1f} GFLOP/s on 1 "
        "thread, {:.1f} GFLOP/s on {} threads\n",
        bf16_one, bf16_all, threads);
  } else {
    fmt::print("vdpbf16ps peak: this CPU has no AVX512-BF16\n");
  }
  if (!json_path.empty()) {
    std::ofstream(json_path) << fmt::format(
        R"({{"isa":"{}","threads":{},"gflops_one_thread":{:.2f},"gflops":{:.2f},)"
        R"("bf16_isa":"{}","bf16_gflops_one_thread":{:.2f},"bf16_gflops":{:.2f}}})"
        "\n",
        kernel.name, threads, best_one, best_all, bf16.name, bf16_one, bf16_all);
  }
  return 0;
}
