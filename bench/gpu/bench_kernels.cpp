// bench_gpu_kernels: memory bandwidth of scratchgrad's memory-bound GPU ops at large sizes, as a
// fraction of what a device-to-device cudaMemcpy reaches on the same GPU (the issue's goal:
// softmax, layer_norm and cross-entropy at >= 70%).
//
//   ./build-gpu/bench/gpu/bench_gpu_kernels --json kernels.json
//
// Bytes counted are the minimum each op must move (every input read once, every output written
// once), so the fraction is "how close to the ideal fused kernel": an op composed of several
// kernels (layer_norm today) or one that writes temporaries pays for them in this number.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/backend/cuda/cuda_backend.h"
#include "nn/layer_norm.h"

namespace {

using sg::Tensor;
constexpr sg::Device kGpu = sg::Device::cuda(0);

// Median wall time of one call of fn in milliseconds, each call waited for.
double median_ms(const std::function<void()>& fn, int reps = 20) {
  for (int i = 0; i < 3; ++i) fn();  // warm-up: allocator, cuBLAS, caches
  sg::cuda_synchronize(0);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    sg::cuda_synchronize(0);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

struct Row {
  std::string name, shape;
  double bytes, ms;
};

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--json") json_path = argv[i + 1];
  }
  if (!sg::cuda_available()) {
    std::fprintf(stderr, "bench_gpu_kernels: %s\n", sg::cuda_unavailable_reason().c_str());
    return 1;
  }
  cudaDeviceProp prop{};
  (void)cudaGetDeviceProperties(&prop, 0);
  const sg::TensorOptions f32 = sg::TensorOptions(sg::kFloat32).device(kGpu);
  std::vector<Row> rows;

  // The reference: cudaMemcpy of 1 GiB within the device (read + write).
  const size_t nbytes = size_t{1} << 30;
  Tensor src = sg::empty({static_cast<int64_t>(nbytes / 4)}, f32);
  Tensor dst = sg::empty({static_cast<int64_t>(nbytes / 4)}, f32);
  const double memcpy_ms = median_ms([&] {
    (void)cudaMemcpyAsync(dst.raw_data(), src.raw_data(), nbytes, cudaMemcpyDeviceToDevice,
                          nullptr);
  });
  const double peak = 2.0 * static_cast<double>(nbytes) / (memcpy_ms * 1e6);  // GB/s
  rows.push_back({"cudaMemcpy D2D (reference)", "1 GiB", 2.0 * nbytes, memcpy_ms});
  rows.push_back(
      {"copy (x.clone())", "[16384, 16384]", 2.0 * nbytes, median_ms([&] { (void)src.clone(); })});

  const int64_t N = 8192, D = 4096, V = 32768, rows_ce = 4096;
  const double nd = 4.0 * N * D;
  Tensor x = sg::randn({N, D}, f32);
  sg::nn::LayerNorm norm({D});
  norm.to(kGpu);
  Tensor logits = sg::randn({rows_ce, V}, f32);
  Tensor target = sg::randint(0, V, {rows_ce}, sg::TensorOptions(sg::kInt64).device(kGpu));
  const double nv = 4.0 * rows_ce * V;
  Tensor g = sg::randn({N, D}, f32);

  // Backward passes need grad mode; everything else runs without a graph.
  {
    Tensor xr = x.detach().requires_grad_(true);
    rows.push_back({"layer_norm forward + backward", "[8192, 4096]", 5 * nd, median_ms([&] {
                      xr.set_grad(Tensor());
                      norm.forward(xr).backward(g);
                    })});
    Tensor lr = logits.detach().requires_grad_(true);
    rows.push_back({"cross_entropy forward + backward", "[4096, 32768]", 3 * nv, median_ms([&] {
                      lr.set_grad(Tensor());
                      sg::cross_entropy(lr, target).backward();
                    })});
  }
  sg::NoGradGuard no_grad;
  rows.push_back(
      {"softmax forward", "[8192, 4096]", 2 * nd, median_ms([&] { (void)sg::softmax(x, 1); })});
  rows.push_back({"log_softmax forward", "[8192, 4096]", 2 * nd,
                  median_ms([&] { (void)sg::log_softmax(x, 1); })});
  Tensor y = sg::softmax(x, 1), dx = sg::empty({N, D}, f32);
  rows.push_back({"softmax backward", "[8192, 4096]", 3 * nd,
                  median_ms([&] { sg::backend_for(kGpu).softmax_backward(g, y, 1, false, dx); })});
  rows.push_back(
      {"sum over the last dim", "[8192, 4096]", nd, median_ms([&] { (void)x.sum({1}); })});
  rows.push_back(
      {"sum over dim 0 (bias gradient)", "[8192, 4096]", nd, median_ms([&] { (void)x.sum({0}); })});

  rows.push_back({"layer_norm forward (nn::LayerNorm)", "[8192, 4096]", 2 * nd,
                  median_ms([&] { (void)norm.forward(x); })});
  rows.push_back({"cross_entropy forward", "[4096, 32768]", nv,
                  median_ms([&] { (void)sg::cross_entropy(logits, target); })});

  std::printf("GPU: %s; device-to-device memcpy: %.0f GB/s\n\n", prop.name, peak);
  std::printf("%-38s %-16s %10s %10s %8s\n", "kernel", "shape", "ms", "GB/s", "of peak");
  std::string json =
      fmt::format(R"({{"benchmark": "gpu_kernels", "gpu": "{}", "memcpy_gbps": {:.1f}, "cases": [)",
                  prop.name, peak);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double gbps = r.bytes / (r.ms * 1e6);
    std::printf("%-38s %-16s %10.3f %10.0f %7.0f%%\n", r.name.c_str(), r.shape.c_str(), r.ms, gbps,
                100 * gbps / peak);
    json += fmt::format(
        R"({}{{"name": "{}", "shape": "{}", "ms": {:.4f}, "gbps": {:.1f}, "fraction_of_memcpy": {:.3f}}})",
        i ? ", " : "", r.name, r.shape, r.ms, gbps, gbps / peak);
  }
  json += "]}\n";
  if (!json_path.empty()) std::ofstream(json_path) << json;
  return 0;
}
