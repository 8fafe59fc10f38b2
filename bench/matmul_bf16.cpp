// bench_matmul --bf16: autocast's bfloat16 products against our float32 ones and against oneDNN's
// bfloat16 matmul, on the Transformer's product shapes (annotated: [800, 512]·[512, 2048] and its
// neighbours, forward and weight gradient; medium: [2016, 256]·[256, 1024]...; tiny and decoding's
// narrow ones, where autocast must not be slower than float32) and on large square ones, where the
// share of the vdpbf16ps peak (bench/fma_peak) is read.
//
// Each round times one call of each side in turn (float32, bfloat16, oneDNN with its casts,
// oneDNN on ready bfloat16 copies), so that all see the same machine; reported: the best call
// (the undisturbed speed), the median, and the median over rounds of each ratio of times.
#include "matmul_bf16.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>

#include "autograd/autograd.h"
#include "autograd/backend/backend.h"
#include "onednn_matmul.h"
#include "timing.h"

namespace sg::bench {

namespace {

struct Shape {
  std::string name;
  int64_t batch, M, N, K;
  bool a_transposed, b_transposed;  // a stored [K, M] (a gradient's gᵀ); b stored [N, K] (Wᵀ)
};

std::vector<Shape> shapes() {
  return {
      {"annotated x·W1ᵀ (ffn in)", 1, 800, 2048, 512, false, true},
      {"annotated h·W2ᵀ (ffn out)", 1, 800, 512, 2048, false, true},
      {"annotated x·Wqᵀ (attention)", 1, 800, 512, 512, false, true},
      {"annotated gᵀ·h (dW1)", 1, 2048, 512, 800, true, false},
      {"medium x·W1ᵀ (ffn in)", 1, 2016, 1024, 256, false, true},
      {"medium h·W2ᵀ (ffn out)", 1, 2016, 256, 1024, false, true},
      {"medium q·kᵀ (256 heads)", 256, 64, 64, 32, false, true},
      {"medium P·v (256 heads)", 256, 64, 32, 64, false, false},
      {"medium dSᵀ·q (256 heads)", 256, 64, 32, 64, true, false},
      {"tiny x·W1ᵀ (ffn in)", 1, 800, 64, 32, false, true},
      {"tiny x·Wqᵀ (attention)", 1, 800, 32, 32, false, true},
      {"decode x·Wqᵀ (100 queries)", 1, 100, 32, 32, false, true},
      {"large 1024", 1, 1024, 1024, 1024, false, false},
      {"large 2048", 1, 2048, 2048, 2048, false, false},
  };
}

// ||x - y|| / ||y||: the bfloat16 result against oneDNN's, a check that both computed the product.
double relative_difference(const float* x, const float* y, int64_t n) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    norm += double(y[i]) * y[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

Bf16Case run(const Shape& s, const Bf16Options& o) {
  const Tensor a =
      s.a_transposed ? randn({s.batch, s.K, s.M}).transpose(1, 2) : randn({s.batch, s.M, s.K});
  const Tensor b =
      s.b_transposed ? randn({s.batch, s.N, s.K}).transpose(1, 2) : randn({s.batch, s.K, s.N});
  auto float32 = [&] { Tensor c = matmul(a, b); };
  Tensor bf16_out;
  auto bfloat16 = [&] {
    AutocastGuard autocast(kBFloat16);
    AutocastCpuMinProductGuard threshold(o.no_threshold ? 0 : autocast_cpu_min_product());
    bf16_out = matmul(a, b);
  };
  // oneDNN takes one matrix of rows for a and b in rows or transposed (ours: any layout).
  std::unique_ptr<OneDnnBf16Matmul> onednn;
  const Tensor a_rows = a.contiguous(), b_stored = s.b_transposed ? b.transpose(1, 2) : b;
  if (o.onednn && s.batch == 1 && !s.a_transposed) {
    onednn = std::make_unique<OneDnnBf16Matmul>(s.M, s.N, s.K, s.b_transposed, o.threads);
  }
  auto onednn_with_casts = [&] {
    onednn->convert_inputs(a_rows.data_ptr<float>(), b_stored.contiguous().data_ptr<float>());
    onednn->multiply();
  };
  auto onednn_product = [&] { onednn->multiply(); };
  for (int i = 0; i < 3; ++i) {  // warm-up: allocator, packing buffers, oneDNN's kernels
    float32();
    bfloat16();
    if (onednn) onednn_with_casts();
  }
  Bf16Case c{s.name,
             fmt::format("{}[{}, {}]·[{}, {}]", s.batch > 1 ? fmt::format("{} x ", s.batch) : "",
                         s.M, s.K, s.K, s.N),
             2.0 * s.batch * s.M * s.N * s.K};
  std::vector<double> f32_s, bf16_s, dnn_s, dnn_product_s, speedup, vs_onednn;
  const auto start = Clock::now();
  while (f32_s.size() < 5 || ms_since(start) < o.ms) {
    f32_s.push_back(seconds_of(float32));
    bf16_s.push_back(seconds_of(bfloat16));
    speedup.push_back(f32_s.back() / bf16_s.back());
    if (onednn) {
      dnn_s.push_back(seconds_of(onednn_with_casts));
      dnn_product_s.push_back(seconds_of(onednn_product));
      vs_onednn.push_back(dnn_s.back() / bf16_s.back());
    }
  }
  auto gflops = [&](double seconds) { return c.flops / seconds * 1e-9; };
  c.f32_best = gflops(*std::min_element(f32_s.begin(), f32_s.end()));
  c.bf16_best = gflops(*std::min_element(bf16_s.begin(), bf16_s.end()));
  c.f32_median = gflops(median(f32_s));
  c.bf16_median = gflops(median(bf16_s));
  c.speedup = median(speedup);
  c.rounds = static_cast<int64_t>(speedup.size());
  if (onednn) {
    c.onednn_best = gflops(*std::min_element(dnn_s.begin(), dnn_s.end()));
    c.onednn_product_best = gflops(*std::min_element(dnn_product_s.begin(), dnn_product_s.end()));
    c.over_onednn = median(vs_onednn);
    c.difference_from_onednn =
        relative_difference(bf16_out.contiguous().data_ptr<float>(), onednn->result(), s.M * s.N);
  }
  fmt::print(
      "{:<30} {:<30} best GFLOP/s: f32 {:6.1f}, bf16 {:6.1f}{}; speed bf16 over f32 {:.2f}x{} ({} "
      "rounds)\n",
      c.name, c.shapes, c.f32_best, c.bf16_best,
      onednn ? fmt::format(", oneDNN {:6.1f} ({:6.1f} without casts)", c.onednn_best,
                           c.onednn_product_best)
             : "",
      c.speedup,
      onednn ? fmt::format(", over oneDNN {:.2f}x (results differ by {:.1e})", c.over_onednn,
                           c.difference_from_onednn)
             : "",
      c.rounds);
  return c;
}

}  // namespace

// The curve autocast's size threshold is chosen from (autograd/autocast.h): for a Linear layer's
// product [rows, d]·[d, d] (b transposed, as x·Wᵀ) and attention's batched [L, dh]·[dh, L], the
// backend's float32 product against its bfloat16 one, called directly (the op would run products
// below the threshold in float32, which is what is being measured here). One call of each in
// turn, the median over rounds of the ratio of their times.
void run_bf16_curve(const Bf16Options& o) {
  Backend& backend = backend_for(kCPU);
  fmt::print("bfloat16 against float32 products by size on {} thread(s), the kernel {}\n",
             o.threads,
             cpu_features() >= CpuFeatures::Avx512Bf16 ? "AVX512-BF16 (vdpbf16ps)"
                                                       : "reference (no AVX512-BF16 here)");
  fmt::print("{:<28} {:>12} {:>10} {:>10} {:>12}\n", "product", "M·N·K", "f32 us", "bf16 us",
             "f32 / bf16");
  auto time_pair = [&](int64_t batch, int64_t M, int64_t N, int64_t K, bool b_transposed) {
    const Tensor a = randn({batch, M, K});
    const Tensor b = b_transposed ? randn({batch, N, K}).transpose(1, 2) : randn({batch, K, N});
    const Tensor c = empty({batch, M, N});
    auto f32 = [&] { backend.gemm(a, b, c, false); };
    auto bf16 = [&] { backend.gemm_bfloat16(a, b, c, false); };
    for (int i = 0; i < 5; ++i) f32(), bf16();
    std::vector<double> f32_s, bf16_s, ratio;
    const auto start = Clock::now();
    while (f32_s.size() < 20 || ms_since(start) < o.ms) {
      f32_s.push_back(seconds_of(f32));
      bf16_s.push_back(seconds_of(bf16));
      ratio.push_back(f32_s.back() / bf16_s.back());
    }
    const std::string name = fmt::format("{}[{}, {}]·[{}, {}]",
                                         batch > 1 ? fmt::format("{} x ", batch) : "", M, K, K, N);
    fmt::print("{:<28} {:>12} {:>10.1f} {:>10.1f} {:>11.2f}x\n", name, batch * M * N * K,
               median(f32_s) * 1e6, median(bf16_s) * 1e6, median(ratio));
  };
  for (const int64_t d : {16, 32, 64, 128, 256, 512}) {
    for (const int64_t rows : {10, 100, 800, 2048}) time_pair(1, rows, d, d, true);
  }
  for (const int64_t L : {10, 32, 64}) {
    for (const int64_t dh : {16, 32, 64}) time_pair(64, L, L, dh, true);
  }
}

std::vector<Bf16Case> run_bf16_cases(const Bf16Options& o) {
  fmt::print("bfloat16 products (autocast) on {} thread(s): the kernel {}; oneDNN {}\n", o.threads,
             cpu_features() >= CpuFeatures::Avx512Bf16 ? "AVX512-BF16 (vdpbf16ps)"
                                                       : "reference (no AVX512-BF16 here)",
             has_onednn() ? onednn_version() : "not built (install libdnnl-dev)");
  std::vector<Bf16Case> cases;
  for (const Shape& s : shapes()) {
    if (o.only.empty() || s.name.find(o.only) != std::string::npos) cases.push_back(run(s, o));
  }
  return cases;
}

std::string bf16_cases_json(const std::vector<Bf16Case>& cases) {
  std::string items;
  for (const Bf16Case& c : cases) {
    if (!items.empty()) items += ",";
    items += fmt::format(
        R"({{"name":"{}","shapes":"{}","flops":{},"f32_best_gflops":{:.2f},)"
        R"("bf16_best_gflops":{:.2f},"f32_median_gflops":{:.2f},"bf16_median_gflops":{:.2f},)"
        R"("bf16_speed_over_f32":{:.4f},"onednn_best_gflops":{:.2f},)"
        R"("onednn_product_best_gflops":{:.2f},"bf16_speed_over_onednn":{:.4f},"rounds":{}}})",
        c.name, c.shapes, c.flops, c.f32_best, c.bf16_best, c.f32_median, c.bf16_median, c.speedup,
        c.onednn_best, c.onednn_product_best, c.over_onednn, c.rounds);
  }
  return "[" + items + "]";
}

}  // namespace sg::bench
