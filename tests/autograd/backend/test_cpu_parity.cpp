// The fast CPU backend (backend/cpu_fast/) against the reference (backend/cpu/): every override,
// forward and backward, on the same inputs under both, on shapes on both sides of each of its
// limits: rows of 15/16/17 and 63/64/65 (the AVX-512 row kernels take rows of up to 16 or 64
// floats), M, N, K around 16 and 64 (tiny_gemm, narrow_gemm, packing), sequences and heads around
// 16 and 64 (the two attention kernels), every mask layout, strided and broadcast inputs, float32
// and float64, and tensors big enough for the thread pool. In the shape of the CUDA parity tests
// (test_cuda_parity.cpp).
//
// Tolerances, as relative error ||fast - reference|| / ||reference|| over a tensor: float32 1e-5.
// Both backends compute in float with double accumulators for the sums that span a row; they
// differ in the order of the float sums inside products (register tiles against OpenBLAS's
// blocking), in fast_exp (vec_math.h: a few ulp from std::exp) and in where they round to float
// (a product accumulated onto the bias, the layer norm's x̂). Each of those is a few ulp
// (~1e-7 relative) per element, so 1e-5 leaves a hundredfold margin and still catches any
// indexing or masking mistake, which moves whole elements. float64 takes the same kernels'
// double paths: 1e-12.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/backend/backend.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

constexpr double kTolerance32 = 1e-5;
constexpr double kTolerance64 = 1e-12;

Tensor random(const Shape& shape, uint64_t seed, DType dtype = kFloat32) {
  Generator gen(seed);
  return randn(shape, gen, dtype);
}

Tensor random_mask(const Shape& shape, uint64_t seed, double keep = 0.7) {
  Generator gen(seed);
  return rand(shape, gen, kFloat64).lt(scalar_tensor(keep, kFloat64));
}

double relative_error(const Tensor& actual, const Tensor& expected) {
  std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (std::isinf(e[i]) && a[i] == e[i]) continue;
    diff += (a[i] - e[i]) * (a[i] - e[i]);
    norm += e[i] * e[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// What fn gives under one backend: its outputs, then, after a backward of Σ outputs·fixed random
// weights, the gradient of every float input.
std::vector<Tensor> run_under(CpuKernels kernels, const Fn& fn, const std::vector<Tensor>& inputs) {
  CpuKernelsGuard guard(kernels);
  std::vector<Tensor> in;
  for (const Tensor& t : inputs) {
    Tensor c = t.detach().clone();
    if (c.is_floating_point()) c.requires_grad_(true);
    in.push_back(c);
  }
  std::vector<Tensor> outs = fn(in);
  std::vector<Tensor> results;
  Tensor loss;
  for (size_t i = 0; i < outs.size(); ++i) {
    results.push_back(outs[i].detach().clone());
    if (!outs[i].requires_grad()) continue;
    Tensor w = random(outs[i].shape(), 1000 + i, outs[i].dtype());
    Tensor term = (outs[i] * w).sum();
    loss = loss.defined() ? loss + term : term;
  }
  if (loss.defined()) loss.backward();
  for (const Tensor& t : in) {
    if (t.is_floating_point()) results.push_back(t.grad().defined() ? t.grad().clone() : Tensor());
  }
  return results;
}

::testing::AssertionResult parity(const Fn& fn, const std::vector<Tensor>& inputs,
                                  const std::string& what) {
  const std::vector<Tensor> fast = run_under(CpuKernels::Fast, fn, inputs);
  const std::vector<Tensor> reference = run_under(CpuKernels::Reference, fn, inputs);
  for (size_t i = 0; i < fast.size(); ++i) {
    const Tensor &f = fast[i], &r = reference[i];
    if (f.defined() != r.defined()) {
      return ::testing::AssertionFailure() << what << ": result " << i << " defined on one side";
    }
    if (!f.defined()) continue;
    if (f.shape() != r.shape() || f.dtype() != r.dtype()) {
      return ::testing::AssertionFailure()
             << fmt::format("{}: result {} is {} {} fast, {} {} reference", what, i, f.dtype(),
                            f.shape(), r.dtype(), r.shape());
    }
    if (!f.is_floating_point()) {
      auto same = testing::tensors_equal(f, r);
      if (!same) return ::testing::AssertionFailure() << what << ": " << same.message();
      continue;
    }
    const double tolerance = r.dtype() == kFloat64 ? kTolerance64 : kTolerance32;
    const double err = relative_error(f, r);
    if (!(err <= tolerance)) {
      return ::testing::AssertionFailure() << fmt::format(
                 "{}: result {} differs, relative error {:.3g} > {:.3g}", what, i, err, tolerance);
    }
  }
  return ::testing::AssertionSuccess();
}

const std::vector<int64_t> kAroundLimits = {1, 15, 16, 17, 63, 64, 65};

TEST(BackendCpuSwitch, NamesParseAndTheGuardRestores) {
  EXPECT_EQ(parse_cpu_kernels("reference"), CpuKernels::Reference);
  EXPECT_EQ(parse_cpu_kernels("fast"), CpuKernels::Fast);
  EXPECT_EQ(cpu_kernels_name(CpuKernels::Reference), "reference");
  EXPECT_SG_ERROR(parse_cpu_kernels("quick"), "expected 'reference' or 'fast', got 'quick'");
  const CpuKernels before = cpu_kernels();
  {
    CpuKernelsGuard guard(CpuKernels::Reference);
    EXPECT_EQ(cpu_kernels(), CpuKernels::Reference);
    EXPECT_EQ(&backend_for(kCPU), &cpu_backend(CpuKernels::Reference));
    CpuKernelsGuard inner(CpuKernels::Fast);
    EXPECT_EQ(&backend_for(kCPU), &cpu_backend(CpuKernels::Fast));
  }
  EXPECT_EQ(cpu_kernels(), before);
}

TEST(BackendCpuSwitch, TensorsOutliveASwitchAndAreFreedByTheirOwnBackend) {
  // Large blocks come from the fast allocator's segments, which free() must never see; small and
  // large, each way round.
  for (CpuKernels first : {CpuKernels::Fast, CpuKernels::Reference}) {
    std::vector<Tensor> kept;
    {
      CpuKernelsGuard guard(first);
      kept = {random({7}, 1), random({1 << 19}, 2)};
    }
    const CpuKernels second = first == CpuKernels::Fast ? CpuKernels::Reference : CpuKernels::Fast;
    CpuKernelsGuard guard(second);
    const Tensor sum = kept[0].sum() + kept[1].sum();  // computed by the other backend
    EXPECT_TRUE(std::isfinite(sum.item<float>()));
    kept.clear();  // freed while the other backend is chosen
  }
}

TEST(BackendCpuParity, ElementwiseOnContiguousStridedBroadcastAndPooledTensors) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (const Shape& shape : {Shape{7, 5}, Shape{300, 129}}) {  // one block; the thread pool
      const Tensor a = random(shape, 1, dtype), b = random(shape, 2, dtype);
      const Tensor row = random({shape[1]}, 3, dtype);
      const Tensor mask = random_mask(shape, 4);
      const std::string what = fmt::format("{} {}", dtype, shape);
      EXPECT_TRUE(parity(
          [](auto& x) {
            return std::vector<Tensor>{x[0].exp(), x[0].tanh(), x[0].relu(), gelu(x[0])};
          },
          {a}, "unary " + what));
      EXPECT_TRUE(parity(
          [](auto& x) {
            return std::vector<Tensor>{x[0] * x[1], x[0] + x[2], x[0].t() / (x[1].t().abs() + 1),
                                       maximum(x[0], x[1])};
          },
          {a, b, row}, "binary " + what));
      EXPECT_TRUE(parity(
          [&](auto& x) {
            return std::vector<Tensor>{where(mask, x[0], x[1]), masked_fill(x[0], mask, 0.0),
                                       x[0].t().contiguous(), x[0].to(kInt64)};
          },
          {a, b}, "where/copy " + what));
    }
  }
}

TEST(BackendCpuParity, RandomNumbersAndFillsAreTheSame) {
  for (DType dtype : {kFloat32, kFloat64}) {
    EXPECT_TRUE(parity(
        [dtype](auto&) {
          Generator gen(7);
          return std::vector<Tensor>{rand({300, 301}, gen, dtype), randn({5, 3}, gen, dtype),
                                     full({400, 70}, 2.5, dtype)};
        },
        {}, fmt::format("random {}", dtype)));
  }
}

TEST(BackendCpuParity, ReductionsOverRowsColumnsAndStridedBlocks) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t C : kAroundLimits) {
      const Tensor x = random({37, C}, C, dtype);
      const std::string what = fmt::format("{} [37, {}]", dtype, C);
      EXPECT_TRUE(parity(
          [](auto& v) {
            return std::vector<Tensor>{v[0].sum({1}), v[0].sum({0}), v[0].t().sum({1}),
                                       max(v[0], 1).first, min(v[0], 0).first};
          },
          {x}, "reduce " + what));
    }
  }
  const Tensor x3 = random({4, 33, 65}, 9);
  EXPECT_TRUE(parity(
      [](auto& v) {
        return std::vector<Tensor>{v[0].sum({0, 2}), v[0].transpose(0, 2).sum({1}),
                                   max(v[0], 1).second};
      },
      {x3}, "reduce [4, 33, 65]"));
}

TEST(BackendCpuParity, ProductsAroundTheTinyNarrowAndPackingLimits) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t M : kAroundLimits) {
      for (int64_t N : {1, 16, 17, 64, 65}) {
        for (int64_t K : {8, 16, 17, 64, 65}) {
          const Tensor a = random({M, K}, M * 7 + K, dtype), b = random({K, N}, N * 5 + K, dtype);
          const Tensor at = random({K, M}, 11, dtype), bt = random({N, K}, 12, dtype);
          const std::string what = fmt::format("{} M={} N={} K={}", dtype, M, N, K);
          ASSERT_TRUE(parity(
              [](auto& v) {
                return std::vector<Tensor>{matmul(v[0], v[1]), matmul(v[2].t(), v[3].t())};
              },
              {a, b, at, bt}, "matmul " + what));
        }
      }
    }
  }
  // Batched products: per-head attention shapes, a transposed b, a broadcast batch.
  for (int64_t T : {10, 16, 17, 32, 64, 65}) {
    const Tensor q = random({3, 4, T, 32}, T), k = random({3, 4, T, 32}, T + 1);
    const Tensor w = random({32, 24}, 5);
    EXPECT_TRUE(parity(
        [](auto& v) {
          return std::vector<Tensor>{matmul(v[0], v[1].transpose(-2, -1)), matmul(v[0], v[2])};
        },
        {q, k, w}, fmt::format("batched matmul T={}", T)));
  }
  const Tensor big_a = random({300, 256}, 1), big_b = random({256, 300}, 2);  // OpenBLAS's own
  EXPECT_TRUE(parity([](auto& v) { return std::vector<Tensor>{matmul(v[0], v[1])}; },
                     {big_a, big_b}, "matmul [300, 256]x[256, 300]"));
}

TEST(BackendCpuParity, SoftmaxAndLogSoftmaxRowsAroundTheRegisterLimits) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t D : {1, 10, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200}) {
      const Tensor x = random({50, D}, D, dtype) * 3;
      EXPECT_TRUE(parity(
          [](auto& v) {
            return std::vector<Tensor>{softmax(v[0], -1), log_softmax(v[0], -1), softmax(v[0], 0)};
          },
          {x}, fmt::format("softmax {} D={}", dtype, D)));
    }
  }
}

TEST(BackendCpuParity, MaskedSoftmaxForEveryMaskLayout) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t S : {5, 15, 16, 17, 31, 33, 63, 64, 65}) {
      const Tensor x = random({2, 3, 9, S}, S, dtype);
      const Tensor full = random_mask({2, 3, 9, S}, 1);
      const Tensor padding = random_mask({2, 1, 1, S}, 2);    // broadcast over heads and queries
      const Tensor per_query = random_mask({2, 1, 9, 1}, 3);  // broadcast along the row
      const Tensor causal = ones({9, S}, TensorOptions(kBool)).tril();
      // The first query of every head with nothing kept.
      const Tensor blind = logical_and(full, arange(9).view({9, 1}).gt(zeros({1}, kInt64)));
      for (const auto& [name, mask] : {std::pair{"full", full},
                                       {"padding", padding},
                                       {"per-query", per_query},
                                       {"causal", causal},
                                       {"blind", blind}}) {
        EXPECT_TRUE(
            parity([m = mask](auto& v) { return std::vector<Tensor>{masked_softmax(v[0], m, -1)}; },
                   {x}, fmt::format("masked_softmax {} S={} {}", dtype, S, name)));
      }
    }
  }
}

TEST(BackendCpuParity, LayerNormAroundTheRegisterLimits) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t D : {1, 15, 16, 17, 63, 64, 65, 100}) {
      const Tensor x = random({40, D}, D, dtype) * 2 + 1;
      const Tensor w = random({D}, 1, dtype), b = random({D}, 2, dtype);
      EXPECT_TRUE(parity(
          [D](auto& v) {
            return std::vector<Tensor>{fused_layer_norm(v[0], {D}, v[1], v[2]),
                                       fused_layer_norm(v[0].t().t(), {D})};
          },
          {x, w, b}, fmt::format("layer_norm {} D={}", dtype, D)));
    }
  }
  const Tensor big = random({64, 40, 48}, 5);  // the thread pool's blocks of rows
  EXPECT_TRUE(parity([](auto& v) { return std::vector<Tensor>{fused_layer_norm(v[0], {48})}; },
                     {big}, "layer_norm [64, 40, 48]"));
}

TEST(BackendCpuParity, LinearAroundTheNarrowLimits) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t rows : {1, 15, 16, 17, 63, 64, 65, 400}) {
      for (int64_t in : {16, 64, 65}) {
        for (int64_t out : {8, 16, 17, 64, 65}) {
          const Tensor x = random({rows, in}, rows + in, dtype);
          const Tensor w = random({out, in}, out, dtype), b = random({out}, 3, dtype);
          ASSERT_TRUE(parity(
              [](auto& v) {
                return std::vector<Tensor>{fused_linear(v[0], v[1], v[2]),
                                           fused_linear(v[0], v[1])};
              },
              {x, w, b}, fmt::format("linear {} rows={} in={} out={}", dtype, rows, in, out)));
        }
      }
    }
  }
}

TEST(BackendCpuParity, AttentionAroundBothKernelsLimits) {
  struct Case {
    int64_t T, S, Dh;
  };
  for (DType dtype : {kFloat32, kFloat64}) {
    for (Case c : {Case{1, 10, 8}, Case{3, 17, 8}, Case{10, 10, 8}, Case{15, 16, 16},
                   Case{16, 16, 17}, Case{17, 17, 16}, Case{40, 64, 32}, Case{64, 63, 64},
                   Case{20, 65, 32}, Case{64, 64, 65}}) {
      const Tensor q = random({2, 3, c.T, c.Dh}, 1, dtype), k = random({2, 3, c.S, c.Dh}, 2, dtype);
      const Tensor v = random({2, 3, c.S, c.Dh}, 3, dtype);
      const Tensor padding = random_mask({2, 1, 1, c.S}, 4, 0.8);
      const Tensor causal = ones({c.T, c.S}, TensorOptions(kBool)).tril(c.S - c.T);
      const Tensor full = random_mask({2, 3, c.T, c.S}, 5);
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.Dh));
      for (const auto& [name, mask] : {std::pair{"none", Tensor()},
                                       {"padding", padding},
                                       {"causal", causal},
                                       {"full", full}}) {
        EXPECT_TRUE(parity(
            [m = mask, scale](auto& x) {
              auto [out, weights] = fused_attention(x[0], x[1], x[2], m, scale);
              return std::vector<Tensor>{out, weights};
            },
            {q, k, v},
            fmt::format("attention {} T={} S={} Dh={} mask {}", dtype, c.T, c.S, c.Dh, name)));
      }
      // Heads split from projections' rows, [B, L, H, D] seen as [B, H, L, D]: strided q, k, v.
      const Tensor q_rows = random({2, c.T, 3, c.Dh}, 6, dtype);
      const Tensor k_rows = random({2, c.S, 3, c.Dh}, 7, dtype);
      const Tensor v_rows = random({2, c.S, 3, c.Dh}, 8, dtype);
      EXPECT_TRUE(parity(
          [&padding, scale](auto& x) {
            auto [out, weights] = fused_attention(x[0].transpose(1, 2), x[1].transpose(1, 2),
                                                  x[2].transpose(1, 2), padding, scale);
            return std::vector<Tensor>{out, weights};
          },
          {q_rows, k_rows, v_rows},
          fmt::format("attention {} T={} S={} Dh={} split heads", dtype, c.T, c.S, c.Dh)));
    }
  }
}

TEST(BackendCpuParity, CrossEntropyAroundTheRowLimits) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (int64_t C : {2, 15, 16, 17, 63, 64, 65, 200}) {
      const Tensor logits = random({30, C}, C, dtype) * 2;
      std::vector<int64_t> labels;
      for (int64_t i = 0; i < 30; ++i) labels.push_back(i == 3 ? -100 : (i * 7 + C / 3) % C);
      const Tensor target = from_vector(labels);  // row 3 ignored
      for (double smoothing : {0.0, 0.1}) {
        EXPECT_TRUE(parity(
            [&target, smoothing](auto& v) {
              return std::vector<Tensor>{cross_entropy(v[0], target, -100, smoothing, "mean"),
                                         cross_entropy(v[0], target, -100, smoothing, "none")};
            },
            {logits}, fmt::format("cross_entropy {} C={} smoothing {}", dtype, C, smoothing)));
      }
    }
  }
}

TEST(BackendCpuParity, AdamStepsWithAndWithoutWeightDecay) {
  for (DType dtype : {kFloat32, kFloat64}) {
    for (bool decoupled : {false, true}) {
      const Tensor p0 = random({300, 65}, 1, dtype), g = random({300, 65}, 2, dtype);
      EXPECT_TRUE(parity(
          [&g, decoupled](auto& v) {
            NoGradGuard no_grad;
            Tensor p = v[0].detach().clone(), m = zeros_like(p), s = zeros_like(p);
            for (int64_t step = 1; step <= 3; ++step) {
              adam_update_(p, g, m, s, 1e-2, 0.9, 0.999, 1e-8, 0.01, decoupled, step);
            }
            return std::vector<Tensor>{p, m, s};
          },
          {p0}, fmt::format("adam {} decoupled {}", dtype, decoupled)));
    }
  }
}

}  // namespace
}  // namespace sg
