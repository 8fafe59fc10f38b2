// Kernel micro-benchmarks (Google Benchmark): the shapes the copy-task Transformer runs, one op at
// a time, each next to the reference that bounds it.
//   gemm      sg::matmul on the three configs' shapes (Linear layers, their weight gradients,
//             batched attention products) vs raw cblas_sgemm on the same buffers (GFLOP/s).
//   softmax, layer_norm, cross_entropy, add/mul   vs memcpy of the same number of bytes: memory
//             bandwidth is the limit of a pass over a tensor, so bytes/s says how close they are.
//
//   ninja -C build bench_kernels && ./build/bench/bench_kernels --benchmark_filter=gemm
//   ./build/bench/bench_kernels --benchmark_min_time=0.2 --benchmark_format=json > kernels.json
//
// Counters: "GFLOP/s" for products, "bytes_per_second" for everything else (bytes read + written
// by one pass of the kernel). Run with OPENBLAS_NUM_THREADS=1 or 2 to compare threading.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/backend/cpu/blas_library.h"
#include "nn/nn.h"

namespace {

// ---- gemm ----
// C [B][M, N] = A [B][M, K] · op(W) where op(W) = Wᵀ for a Linear layer (W [N, K]), B = batch.
struct GemmShape {
  int64_t batch, M, N, K;
  bool b_transposed;  // B read as a transposed view (Linear's weight, attention's keys)
};

void set_gemm_counters(benchmark::State& state, const GemmShape& s) {
  const double flops = 2.0 * static_cast<double>(s.batch * s.M * s.N * s.K);
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_gemm_sg(benchmark::State& state, GemmShape s) {
  sg::NoGradGuard no_grad;
  sg::Tensor a = sg::randn({s.batch, s.M, s.K});
  sg::Tensor b = s.b_transposed ? sg::randn({s.batch, s.N, s.K}).transpose(1, 2)
                                : sg::randn({s.batch, s.K, s.N});
  if (s.batch == 1) a = a.view({s.M, s.K}), b = b.select(0, 0);
  for (auto _ : state) benchmark::DoNotOptimize(sg::matmul(a, b));
  set_gemm_counters(state, s);
}

void BM_gemm_cblas(benchmark::State& state, GemmShape s) {
  std::vector<float> a(s.batch * s.M * s.K, 0.5f), b(s.batch * s.K * s.N, 0.25f),
      c(s.batch * s.M * s.N);
  const auto tb = s.b_transposed ? CblasTrans : CblasNoTrans;
  const int ldb = static_cast<int>(s.b_transposed ? s.K : s.N);
  for (auto _ : state) {
    for (int64_t i = 0; i < s.batch; ++i) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, int(s.M), int(s.N), int(s.K), 1.0f,
                  a.data() + i * s.M * s.K, int(s.K), b.data() + i * s.K * s.N, ldb, 0.0f,
                  c.data() + i * s.M * s.N, int(s.N));
    }
    benchmark::DoNotOptimize(c.data());
  }
  set_gemm_counters(state, s);
}

#define SG_GEMM(name, ...)                                                    \
  BENCHMARK_CAPTURE(BM_gemm_sg, name, GemmShape{__VA_ARGS__})->UseRealTime(); \
  BENCHMARK_CAPTURE(BM_gemm_cblas, name, GemmShape{__VA_ARGS__})->UseRealTime()

// tiny: d_model 32, ffn 64, 80 x 10 tokens, 4 heads of 8.
SG_GEMM(tiny_linear_800x32x32, 1, 800, 32, 32, true);
SG_GEMM(tiny_ffn1_800x64x32, 1, 800, 64, 32, true);
SG_GEMM(tiny_weight_grad_32x64x800, 1, 32, 64, 800, false);
SG_GEMM(tiny_scores_320x10x10x8, 320, 10, 10, 8, true);
SG_GEMM(decode_linear_100x32x32, 1, 100, 32, 32, true);
SG_GEMM(decode_scores_400x1x10x8, 400, 1, 10, 8, true);
SG_GEMM(tiny_attn_v_320x10x8x10, 320, 10, 8, 10, false);
// annotated: d_model 512, ffn 2048, 800 tokens, 8 heads of 64.
SG_GEMM(annotated_linear_800x512x512, 1, 800, 512, 512, true);
SG_GEMM(annotated_ffn1_800x2048x512, 1, 800, 2048, 512, true);
SG_GEMM(annotated_ffn2_800x512x2048, 1, 800, 512, 2048, true);
SG_GEMM(annotated_weight_grad_512x2048x800, 1, 512, 2048, 800, false);
SG_GEMM(annotated_scores_640x10x10x64, 640, 10, 10, 64, true);
// medium: d_model 256, ffn 1024, 32 x 64 tokens, 8 heads of 32.
SG_GEMM(medium_linear_2048x256x256, 1, 2048, 256, 256, true);
SG_GEMM(medium_ffn1_2048x1024x256, 1, 2048, 1024, 256, true);
SG_GEMM(medium_weight_grad_256x1024x2048, 1, 256, 1024, 2048, false);
SG_GEMM(medium_scores_256x64x64x32, 256, 64, 64, 32, true);
SG_GEMM(medium_attn_v_256x64x32x64, 256, 64, 32, 64, false);

// ---- memory-bound kernels, against memcpy of the bytes they move ----
void set_bytes(benchmark::State& state, int64_t bytes_per_iteration) {
  state.SetBytesProcessed(state.iterations() * bytes_per_iteration);
}

void BM_memcpy(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> src(n, 1.0f), dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n * sizeof(float));
    benchmark::DoNotOptimize(dst.data());
  }
  set_bytes(state, 2 * n * 4);
}

// rows x cols float32, the last dim being the one softmax / layer_norm work along.
void BM_softmax(benchmark::State& state) {
  sg::NoGradGuard no_grad;
  sg::Tensor x = sg::randn({state.range(0), state.range(1)});
  for (auto _ : state) benchmark::DoNotOptimize(sg::softmax(x, -1));
  set_bytes(state, 2 * x.numel() * 4);
}

void BM_softmax_backward(benchmark::State& state) {
  sg::Tensor x =
      sg::randn({state.range(0), state.range(1)}, sg::TensorOptions().requires_grad(true));
  sg::Tensor y = sg::softmax(x, -1);
  sg::Tensor g = sg::randn(y.shape());
  for (auto _ : state) {
    x.set_grad(sg::Tensor());
    y.backward(g, /*retain_graph=*/true);
  }
  set_bytes(state, 3 * x.numel() * 4);
}

void BM_layer_norm(benchmark::State& state) {
  sg::NoGradGuard no_grad;
  const int64_t D = state.range(1);
  sg::nn::LayerNorm norm({D});
  sg::Tensor x = sg::randn({state.range(0), D});
  for (auto _ : state) benchmark::DoNotOptimize(norm.forward(x));
  set_bytes(state, 2 * x.numel() * 4);
}

void BM_layer_norm_backward(benchmark::State& state) {
  const int64_t D = state.range(1);
  sg::nn::LayerNorm norm({D});
  sg::Tensor x = sg::randn({state.range(0), D}, sg::TensorOptions().requires_grad(true));
  sg::Tensor y = norm.forward(x);
  sg::Tensor g = sg::randn(y.shape());
  for (auto _ : state) {
    norm.zero_grad();
    x.set_grad(sg::Tensor());
    y.backward(g, /*retain_graph=*/true);
  }
  set_bytes(state, 3 * x.numel() * 4);
}

// A Linear layer [rows, in] -> [rows, out] (fused_linear), forward alone and forward + backward:
// the products, the bias and the bias gradient together, against the flops of the products.
void BM_linear(benchmark::State& state) {
  const int64_t rows = state.range(0), in = state.range(1), out = state.range(2);
  const bool backward = state.range(3) != 0;
  sg::nn::Linear layer(in, out);
  sg::Tensor x = sg::randn({rows, in}, sg::TensorOptions().requires_grad(backward));
  sg::Tensor g = sg::randn({rows, out});
  for (auto _ : state) {
    if (!backward) {
      sg::NoGradGuard no_grad;
      benchmark::DoNotOptimize(layer.forward(x));
      continue;
    }
    layer.zero_grad();
    x.set_grad(sg::Tensor());
    layer.forward(x).backward(g);
  }
  const double flops = 2.0 * double(rows * in * out) * (backward ? 3 : 1);
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_cross_entropy(benchmark::State& state) {
  const int64_t N = state.range(0), C = state.range(1);
  sg::Tensor logits = sg::randn({N, C}, sg::TensorOptions().requires_grad(true));
  sg::Tensor target = sg::randint(0, C, {N});
  for (auto _ : state) {
    logits.set_grad(sg::Tensor());
    sg::cross_entropy(logits, target).backward();
  }
  set_bytes(state, 3 * N * C * 4);  // forward reads the logits; backward reads and writes them
}

void BM_add(benchmark::State& state) {
  sg::NoGradGuard no_grad;
  sg::Tensor a = sg::randn({state.range(0)}), b = sg::randn({state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(a + b);
  set_bytes(state, 3 * a.numel() * 4);
}

void BM_mul_broadcast_bias(benchmark::State& state) {
  sg::NoGradGuard no_grad;  // x [rows, D] * w [D]: a LayerNorm's weight, a Linear's bias
  sg::Tensor x = sg::randn({state.range(0), state.range(1)}), w = sg::randn({state.range(1)});
  for (auto _ : state) benchmark::DoNotOptimize(x * w);
  set_bytes(state, 2 * x.numel() * 4);
}

void BM_relu_backward(benchmark::State& state) {
  sg::Tensor x =
      sg::randn({state.range(0), state.range(1)}, sg::TensorOptions().requires_grad(true));
  sg::Tensor y = sg::relu(x);
  sg::Tensor g = sg::randn(y.shape());
  for (auto _ : state) {
    x.set_grad(sg::Tensor());
    y.backward(g, /*retain_graph=*/true);
  }
  set_bytes(state, 3 * x.numel() * 4);
}

void BM_masked_softmax(benchmark::State& state) {
  sg::NoGradGuard no_grad;  // attention scores [B*H, T, T] under a causal mask [T, T]
  const int64_t T = state.range(1);
  sg::Tensor x = sg::randn({state.range(0), T, T});
  sg::Tensor mask = sg::ones({T, T}, sg::kBool).tril();
  for (auto _ : state) benchmark::DoNotOptimize(sg::masked_softmax(x, mask));
  set_bytes(state, 2 * x.numel() * 4);
}

// Attention over heads [B, H, T, Dh] and keys [B, H, S, Dh] (fused_attention, no mask): forward
// alone, and forward + backward; the tiny model's training heads and a decoding step's.
// Attention as the models call it (MultiheadAttention without dropout: fused_attention, the
// backend's kernel where it takes the shapes, else attention_composed), the heads split from
// [B, L, H·D] rows as MultiheadAttention's projections make them.
void BM_attention(benchmark::State& state) {
  const int64_t B = state.range(0), H = state.range(1), T = state.range(2), S = state.range(3);
  const int64_t Dh = state.range(4);
  const bool backward = state.range(5) != 0;
  const sg::TensorOptions options = sg::TensorOptions().requires_grad(backward);
  sg::Tensor q_rows = sg::randn({B, T, H, Dh}, options), k_rows = sg::randn({B, S, H, Dh}, options);
  sg::Tensor v_rows = sg::randn({B, S, H, Dh}, options), g = sg::randn({B, H, T, Dh});
  auto heads = [](const sg::Tensor& rows) { return rows.transpose(1, 2); };
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  for (auto _ : state) {
    if (!backward) {
      sg::NoGradGuard no_grad;
      benchmark::DoNotOptimize(
          sg::fused_attention(heads(q_rows), heads(k_rows), heads(v_rows), sg::Tensor(), scale));
      continue;
    }
    for (sg::Tensor* t : {&q_rows, &k_rows, &v_rows}) t->set_grad(sg::Tensor());
    sg::fused_attention(heads(q_rows), heads(k_rows), heads(v_rows), sg::Tensor(), scale)
        .first.backward(g);
  }
  // The products' flops (q·kᵀ and P·v forward; dP, dq, dk, dv backward), against gemm's.
  const double flops = 2.0 * double(B * H * T * S * Dh) * (backward ? 6 : 2);
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// One decoding step's attention against a KV cache (nn/kv_buffer.h): one query per head, keys
// by columns ([B, H, Dh, capacity] read as [B, H, S, Dh]), values in rows ([B, H, capacity, Dh]).
void BM_attention_cached(benchmark::State& state) {
  sg::NoGradGuard no_grad;
  const int64_t B = state.range(0), H = state.range(1), S = state.range(2), Dh = state.range(3);
  const int64_t capacity = 16;
  sg::Tensor q = sg::randn({B, 1, H, Dh}).transpose(1, 2);
  sg::Tensor k = sg::randn({B, H, Dh, capacity}).narrow(3, 0, S).transpose(2, 3);
  sg::Tensor v = sg::randn({B, H, capacity, Dh}).narrow(2, 0, S);
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  for (auto _ : state) benchmark::DoNotOptimize(sg::fused_attention(q, k, v, sg::Tensor(), scale));
}

void BM_sum_columns(benchmark::State& state) {
  sg::NoGradGuard no_grad;  // a bias gradient: g [rows, D] summed over the rows
  sg::Tensor x = sg::randn({state.range(0), state.range(1)});
  for (auto _ : state) benchmark::DoNotOptimize(x.sum({0}));
  set_bytes(state, x.numel() * 4);
}

// Merging attention heads: [B, H, T, Dh] read as [B, T, H, Dh] (a transposed view) and copied
// into rows, what reshape does after attention; runs of Dh contiguous floats.
void BM_merge_heads_copy(benchmark::State& state) {
  sg::NoGradGuard no_grad;
  sg::Tensor heads = sg::randn({state.range(0), state.range(1), state.range(2), state.range(3)});
  sg::Tensor swapped = heads.transpose(1, 2);
  for (auto _ : state) benchmark::DoNotOptimize(swapped.contiguous());
  set_bytes(state, 2 * heads.numel() * 4);
}

// A bias broadcast into every row (what fused_linear writes before accumulating the product).
void BM_broadcast_rows_copy(benchmark::State& state) {
  sg::NoGradGuard no_grad;
  sg::Tensor bias = sg::randn({state.range(1)});
  for (auto _ : state) {
    benchmark::DoNotOptimize(bias.expand({state.range(0), state.range(1)}).contiguous());
  }
  set_bytes(state, state.range(0) * state.range(1) * 4);
}

// Shapes: tiny attention weights [80*4*10, 10], tiny activations [800, 32], medium attention
// [32*8*64, 64], medium activations [2048, 256], annotated [800, 512] and a vocabulary [720, 11].
BENCHMARK(BM_memcpy)->Arg(32000)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_softmax)->Args({3200, 10})->Args({16384, 64})->UseRealTime();
BENCHMARK(BM_softmax_backward)->Args({3200, 10})->Args({16384, 64})->UseRealTime();
BENCHMARK(BM_layer_norm)->Args({800, 32})->Args({2048, 256})->Args({800, 512})->UseRealTime();
BENCHMARK(BM_layer_norm_backward)
    ->Args({800, 32})
    ->Args({2048, 256})
    ->Args({800, 512})
    ->UseRealTime();
BENCHMARK(BM_linear)
    ->Args({100, 32, 32, 0})  // a decoding step's
    ->Args({800, 32, 32, 0})
    ->Args({800, 32, 32, 1})
    ->Args({800, 32, 64, 1})
    ->Args({2048, 256, 256, 1})
    ->UseRealTime();
BENCHMARK(BM_cross_entropy)->Args({720, 11})->Args({2016, 11})->Args({2048, 1000})->UseRealTime();
BENCHMARK(BM_add)->Arg(25600)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_mul_broadcast_bias)->Args({800, 32})->Args({2048, 256})->UseRealTime();
BENCHMARK(BM_relu_backward)->Args({800, 64})->Args({2048, 1024})->UseRealTime();
BENCHMARK(BM_masked_softmax)->Args({320, 10})->Args({256, 64})->UseRealTime();
BENCHMARK(BM_attention)
    ->Args({80, 4, 10, 10, 8, 0})
    ->Args({80, 4, 10, 10, 8, 1})
    ->Args({100, 4, 1, 10, 8, 0})
    ->Args({100, 4, 4, 10, 8, 0})
    ->Args({32, 8, 64, 64, 32, 0})  // medium: gemm_attention.cpp
    ->Args({32, 8, 64, 64, 32, 1})
    ->Args({80, 8, 10, 10, 64, 1})  // annotated
    ->UseRealTime();
BENCHMARK(BM_attention_cached)->Args({100, 4, 10, 8})->UseRealTime();
BENCHMARK(BM_sum_columns)->Args({800, 32})->Args({2048, 1024})->UseRealTime();
BENCHMARK(BM_merge_heads_copy)->Args({80, 4, 11, 8})->Args({32, 8, 64, 32})->UseRealTime();
BENCHMARK(BM_broadcast_rows_copy)->Args({880, 32})->Args({2048, 1024})->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  sg::choose_fast_blas_once();  // before the kernels are named (autograd/blas.h)
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
