// Tests for autograd/backend/cuda/: every kernel and every op, forward and backward, on the GPU
// against the CPU backend (the reference) on the same random inputs, broadcast and non-contiguous
// inputs included; gradchecks run on the GPU in float64; the allocator, deferred kernel errors
// and device errors. Every test skips, with the reason, when no usable GPU answers (or the build
// has no CUDA): run them on a GPU machine with scripts/gpu_tests.sh.
//
// Parity is measured as PyTorch's tests do: relative error ||gpu - cpu|| / ||cpu|| over the whole
// tensor, which must stay well under 1e-3 in float32 (kTolerance).
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "autograd/backend/adam_step_scalars.h"
#include "autograd/backend/backend.h"
#include "tests/support/gpu_under_test.h"
#include "tests/support/op_info.h"
#include "tests/support/testing.h"

#if SCRATCHGRAD_HAS_CUDA
#include "autograd/backend/cuda/cuda_backend.h"
#endif

namespace sg {
namespace {

using Dims = std::vector<int64_t>;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

constexpr double kTolerance = 1e-4;  // float32: "well under 1e-3"
constexpr double kTolerance64 = 1e-10;

using sg::testing::kGpu;
using sg::testing::kSelfTest;

class CudaParity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kSelfTest && !cuda_available()) GTEST_SKIP() << cuda_unavailable_reason();
  }
};
class CudaKernels : public CudaParity {};
class CudaGradcheck : public CudaParity {};
class CudaDevice : public CudaParity {};
class CudaMemory : public CudaParity {};

// ---- helpers --------------------------------------------------------------------------------

Tensor randn_cpu(const Shape& shape, uint64_t seed, DType dtype = kFloat32) {
  Generator gen(seed);
  return randn(shape, gen, dtype);
}

// Uniform in [low, high): inputs for log, sqrt, pow and friends.
Tensor uniform_cpu(const Shape& shape, uint64_t seed, double low, double high,
                   DType dtype = kFloat32) {
  Generator gen(seed);
  NoGradGuard no_grad;
  return (rand(shape, gen, kFloat64) * (high - low) + low).to(dtype);
}

Tensor randint_cpu(int64_t low, int64_t high, const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randint(low, high, shape, gen);
}

// A copy on the GPU, never sharing storage with t (in the CPU self-test too).
Tensor on_gpu(const Tensor& t) {
  Tensor moved = t.detach().to(kGpu);
  return moved.shares_storage(t) ? moved.clone() : moved;
}

// ||actual - expected|| / ||expected|| in double on the host (absolute when expected is all 0).
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

// The GPU result against the CPU one: same shape and dtype, the GPU one on the GPU, and values
// equal (bool, int64) or within `tolerance` relative error (floats).
::testing::AssertionResult matches(const Tensor& gpu, const Tensor& cpu, const std::string& what,
                                   double tolerance = -1) {
  if (!gpu.defined() || !cpu.defined()) {
    if (gpu.defined() == cpu.defined()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << what << ": defined on " << (gpu.defined() ? "the GPU" : "the CPU") << " only";
  }
  if (gpu.device() != kGpu) {
    return ::testing::AssertionFailure() << what << ": the result is on " << gpu.device();
  }
  if (gpu.shape() != cpu.shape() || gpu.dtype() != cpu.dtype()) {
    return ::testing::AssertionFailure()
           << fmt::format("{}: GPU gives {} {}, CPU gives {} {}", what, gpu.dtype(), gpu.shape(),
                          cpu.dtype(), cpu.shape());
  }
  if (!cpu.is_floating_point()) {
    ::testing::AssertionResult same = testing::tensors_equal(gpu, cpu);
    if (!same) return ::testing::AssertionFailure() << what << ": " << same.message();
    return same;
  }
  if (tolerance < 0) tolerance = cpu.dtype() == kFloat64 ? kTolerance64 : kTolerance;
  const double err = relative_error(gpu, cpu);
  if (err <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << fmt::format("{}: relative error {:.3g} > {:.3g}\n  GPU {}\n  CPU {}", what, err,
                        tolerance, gpu, cpu);
}

// Runs fn on the CPU inputs and on GPU copies of them, forward and then backward with one fixed
// random output gradient (float inputs require grad), and compares the outputs and every input's
// gradient. Views that fn makes (transposes, slices, expands) test the kernels on
// non-contiguous inputs.
::testing::AssertionResult parity(const Fn& fn, const std::vector<Tensor>& inputs,
                                  double tolerance = -1) {
  std::vector<Tensor> cpu_in, gpu_in;
  for (const Tensor& t : inputs) {
    Tensor c = t.detach().clone();
    Tensor g = on_gpu(t);
    if (t.is_floating_point()) {
      c.requires_grad_(true);
      g.requires_grad_(true);
    }
    cpu_in.push_back(c);
    gpu_in.push_back(g);
  }
  Tensor y_cpu = fn(cpu_in);
  Tensor y_gpu = fn(gpu_in);
  ::testing::AssertionResult forward = matches(y_gpu, y_cpu, "forward", tolerance);
  if (!forward) return forward;
  if (!y_cpu.requires_grad()) return ::testing::AssertionSuccess();
  if (!y_gpu.requires_grad()) {
    return ::testing::AssertionFailure() << "the GPU result is not connected to the graph";
  }

  Tensor v = randn_cpu(y_cpu.shape(), 99, y_cpu.dtype());
  y_cpu.backward(v);
  y_gpu.backward(on_gpu(v));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_floating_point()) continue;
    ::testing::AssertionResult grad = matches(gpu_in[i].grad(), cpu_in[i].grad(),
                                              fmt::format("gradient of input {}", i), tolerance);
    if (!grad) return grad;
  }
  return ::testing::AssertionSuccess();
}

// Central differences with every evaluation on the GPU: the analytic gradient comes from one
// backward pass on the GPU; each perturbed input is made on the host and uploaded. (sg::gradcheck
// writes the perturbation through a host pointer, which a GPU tensor does not have.)
::testing::AssertionResult gpu_gradcheck(const Fn& fn, const std::vector<Tensor>& inputs) {
  constexpr double eps = 1e-6, atol = 1e-5, rtol = 1e-3;
  std::vector<Tensor> gpu_in;
  for (const Tensor& t : inputs) {
    Tensor g = on_gpu(t);
    if (t.requires_grad()) g.requires_grad_(true);
    gpu_in.push_back(g);
  }
  Tensor out = fn(gpu_in);
  if (out.device() != kGpu) return ::testing::AssertionFailure() << "fn ran on " << out.device();
  Tensor v = on_gpu(randn_cpu(out.shape(), 1234, kFloat64));
  out.backward(v);

  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    const std::vector<double> analytic = gpu_in[i].grad().to_vector<double>();
    const Tensor base = inputs[i].detach().contiguous();
    auto weighted_output = [&](int64_t k, double delta) {
      Tensor perturbed = base.clone();
      perturbed.data_ptr<double>()[k] += delta;
      std::vector<Tensor> in;
      for (const Tensor& g : gpu_in) in.push_back(g.detach());
      in[i] = on_gpu(perturbed);
      NoGradGuard no_grad;
      return sum(mul(fn(in), v)).item<double>();
    };
    for (int64_t k = 0; k < base.numel(); ++k) {
      const double numeric = (weighted_output(k, eps) - weighted_output(k, -eps)) / (2 * eps);
      const double err = std::abs(analytic[static_cast<size_t>(k)] - numeric);
      if (!(err <= atol + rtol * std::abs(numeric))) {
        return ::testing::AssertionFailure()
               << fmt::format("input {} element {}: analytic {:.8g} but numeric {:.8g}", i, k,
                              analytic[static_cast<size_t>(k)], numeric);
      }
    }
  }
  return ::testing::AssertionSuccess();
}

Tensor leaf64(const Shape& shape, uint64_t seed, double low = -1, double high = 1) {
  return uniform_cpu(shape, seed, low, high, kFloat64).requires_grad_(true);
}

// ---- moving data -----------------------------------------------------------------------------

TEST_F(CudaDevice, ToGpuAndBackKeepsEveryDtype) {
  for (DType dtype : {kFloat32, kFloat64, kInt64, kBool}) {
    Tensor x = (randn_cpu({3, 5}, 1) * 3.0).to(dtype);
    Tensor g = x.to(kGpu);
    EXPECT_EQ(g.device(), kGpu);
    EXPECT_EQ(g.dtype(), dtype);
    EXPECT_TRUE(testing::tensors_equal(g.to(kCPU), x)) << dtype;
    // A non-contiguous view is made contiguous on the way.
    EXPECT_TRUE(testing::tensors_equal(x.t().to(kGpu).to(kCPU), x.t())) << dtype;
  }
}

TEST_F(CudaDevice, ToIsDifferentiableAcrossDevices) {
  // As in PyTorch: y = x.to('cuda'); y.sum().backward() fills x.grad on the CPU, and back.
  Tensor x = randn_cpu({3, 4}, 2, kFloat64).requires_grad_(true);
  Tensor w = randn_cpu({3, 4}, 3, kFloat64);
  Tensor y = x.to(kGpu);
  EXPECT_TRUE(y.requires_grad());
  (y * on_gpu(w)).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().device(), kCPU);
  EXPECT_TRUE(testing::tensors_equal(x.grad(), w));

  Tensor leaf = on_gpu(randn_cpu({5}, 4)).requires_grad_(true);
  Tensor back = (leaf * 3.0).to(kCPU);
  back.sum().backward();
  EXPECT_EQ(leaf.grad().device(), kGpu);
  EXPECT_TRUE(testing::tensors_equal(leaf.grad().to(kCPU), full({5}, 3.0)));
  if (!kSelfTest) {  // (on the CPU, to(kCPU) returns x itself)
    NoGradGuard no_grad;
    EXPECT_FALSE(x.to(kGpu).requires_grad()) << "no graph under NoGradGuard";
  }
}

TEST_F(CudaDevice, FactoriesMakeTensorsOnTheGpu) {
  TensorOptions options = TensorOptions(kFloat32).device(kGpu);
  EXPECT_TRUE(matches(zeros({2, 3}, options), zeros({2, 3}), "zeros"));
  EXPECT_TRUE(matches(full({4}, 2.5, options), full({4}, 2.5), "full"));
  EXPECT_TRUE(
      matches(arange(0, 10, 3, TensorOptions(kInt64).device(kGpu)), arange(0, 10, 3), "arange"));
  EXPECT_TRUE(matches(eye(3, options), eye(3), "eye"));
  // Random tensors are drawn on the host: the same seed gives the same values on both devices.
  manual_seed(3);
  Tensor a = randn({4, 4}, options);
  manual_seed(3);
  Tensor b = randn({4, 4});
  EXPECT_TRUE(matches(a, b, "randn", 0.0));
}

// copy_from_host returns before the GPU has copied anything (the bytes wait in a pinned staging
// buffer, autograd/backend/cuda/staging.h): the caller may overwrite and free its buffer at once.
TEST_F(CudaDevice, AnUploadDoesNotReadTheHostBufferAfterItReturns) {
  Backend& backend = backend_for(kGpu);
  std::vector<Tensor> uploaded;
  std::vector<std::vector<float>> expected;
  // Small ones (many share a staging buffer size, more than the pool keeps per size) and large.
  std::vector<int64_t> sizes(100, 700);
  for (int64_t n : {1, 1024, 1025, 300000, 5000000}) sizes.push_back(n);
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto host = std::make_unique<std::vector<float>>(static_cast<size_t>(sizes[i]));
    for (size_t k = 0; k < host->size(); ++k) (*host)[k] = static_cast<float>(i * 7 + k % 1000);
    expected.push_back(*host);
    Tensor dst = empty({sizes[i]}, TensorOptions(kFloat32).device(kGpu));
    backend.copy_from_host(dst.raw_data(), host->data(), host->size() * sizeof(float));
    std::fill(host->begin(), host->end(), -1.0f);  // overwritten, then freed, right after
    host.reset();
    uploaded.push_back(dst);
  }
  // The same through Tensor::to, the source tensor changed in place right after.
  Tensor source = from_vector(std::vector<int64_t>{4, 8, 15, 16, 23, 42}, {2, 3});
  Tensor moved = on_gpu(source);
  source.fill_(0.0);
  EXPECT_EQ(moved.to_vector<int64_t>(), (std::vector<int64_t>{4, 8, 15, 16, 23, 42}));
  for (size_t i = 0; i < uploaded.size(); ++i) {
    EXPECT_EQ(uploaded[i].to_vector<float>(), expected[i]) << "upload " << i;
  }
}

// An upload runs in stream order: after the kernels queued before it (which still read the old
// contents of the tensor it overwrites) and before those queued after it.
TEST_F(CudaDevice, AnUploadQueuedBehindKernelsKeepsStreamOrder) {
  const int64_t n = kSelfTest ? 64 : 2048;  // on a GPU: enough work to still be queued
  Tensor a_cpu = randn_cpu({n, n}, 200) / std::sqrt(static_cast<double>(n));
  Tensor a = on_gpu(a_cpu);
  Tensor y = a, y_cpu = a_cpu;
  for (int i = 0; i < 8; ++i) {
    y = matmul(y, a);
    y_cpu = matmul(y_cpu, a_cpu);
  }
  // Overwrite `a`, which the matmuls queued above read, and fill a fresh tensor; then queue a
  // kernel that reads both uploads.
  const std::vector<float> ones(static_cast<size_t>(n * n), 1.0f);
  std::vector<float> counting(static_cast<size_t>(n));
  for (size_t k = 0; k < counting.size(); ++k) counting[k] = static_cast<float>(k);
  Tensor fresh = empty({n}, TensorOptions(kFloat32).device(kGpu));
  backend_for(kGpu).copy_from_host(a.raw_data(), ones.data(), ones.size() * sizeof(float));
  backend_for(kGpu).copy_from_host(fresh.raw_data(), counting.data(),
                                   counting.size() * sizeof(float));
  Tensor after = sum(a, {0}) + fresh;  // n + k
  EXPECT_TRUE(matches(y, y_cpu, "matmuls queued before the upload", 1e-3));
  EXPECT_TRUE(matches(a, full({n, n}, 1.0), "the uploaded tensor"));
  EXPECT_TRUE(matches(after, arange(0, n, 1).to(kFloat32) + static_cast<double>(n),
                      "a kernel queued after the uploads"));
}

TEST_F(CudaDevice, MixingDevicesIsAClearError) {
  if (kSelfTest) GTEST_SKIP() << "needs CUDA";
  Tensor a = randn_cpu({2, 3}, 1);
  Tensor b = on_gpu(a);
  EXPECT_SG_ERROR(a + b, "add: tensors are on cpu and cuda:0");
  EXPECT_SG_ERROR(matmul(b, a.t()), "cuda:0");
  EXPECT_SG_ERROR(where(b.gt(0.0), a, a), "where: tensors are on");
}

TEST_F(CudaDevice, ADeviceThatDoesNotExistIsAClearError) {
  if (kSelfTest) GTEST_SKIP() << "needs CUDA";
  EXPECT_SG_ERROR(zeros({2}, TensorOptions().device(Device::cuda(63))), "cuda:63: no such device");
}

TEST_F(CudaDevice, PrintingAGpuTensorNamesTheDevice) {
  if (kSelfTest) GTEST_SKIP() << "needs CUDA";
  EXPECT_NE(on_gpu(tensor({1.0, 2.0})).str().find("device='cuda:0'"), std::string::npos);
}

// ---- elementwise -----------------------------------------------------------------------------

// Whole numbers and halves in [-4, 4): every dtype conversion of them (float to int64 truncates)
// is exact on both devices.
Tensor halves_cpu(const Shape& shape, uint64_t seed) {
  return randint_cpu(-8, 8, shape, seed).to(kFloat32) / 2.0;
}

TEST_F(CudaKernels, CopyConvertsBetweenEveryPairOfDtypes) {
  const Tensor values = halves_cpu({4, 6}, 2);
  for (DType from : {kBool, kInt64, kFloat32, kFloat64}) {
    for (DType to : {kBool, kInt64, kFloat32, kFloat64}) {
      Tensor src = values.to(from);
      // A transposed source: the copy kernel walks strides, not memory order.
      EXPECT_TRUE(
          matches(on_gpu(src).t().to(to), src.t().to(to), fmt::format("{} -> {}", from, to), 0.0));
    }
  }
}

TEST_F(CudaKernels, FillAndCopyIntoStridedViews) {
  for (DType dtype : {kBool, kInt64, kFloat32, kFloat64}) {
    Tensor cpu = zeros({6, 8}, dtype);
    Tensor gpu = on_gpu(cpu);
    NoGradGuard no_grad;
    cpu.slice(1, 1, 8, 3).fill_(1.0);  // every third column
    gpu.slice(1, 1, 8, 3).fill_(1.0);
    cpu.select(0, 4).fill_(1.0);
    gpu.select(0, 4).fill_(1.0);
    EXPECT_TRUE(matches(gpu, cpu, fmt::format("fill {}", dtype)));
    // copy_ broadcasts a row into a transposed view.
    Tensor row = halves_cpu({6}, 3).to(dtype);
    cpu.t().slice(0, 0, 8, 2).copy_(row);
    gpu.t().slice(0, 0, 8, 2).copy_(on_gpu(row));
    EXPECT_TRUE(matches(gpu, cpu, fmt::format("copy_ {}", dtype)));
  }
}

TEST_F(CudaKernels, ElementwiseKernelsHandleManyDimsAndLargeTensors) {
  // Six dims that cannot be merged (a permutation), and a tensor past one grid of blocks.
  Tensor x = randn_cpu({2, 3, 4, 5, 6, 7}, 4);
  EXPECT_TRUE(parity([](const auto& in) { return exp(in[0].permute({5, 3, 1, 0, 2, 4})); }, {x}));
  Tensor big = randn_cpu({3000, 1100}, 5);
  EXPECT_TRUE(parity([](const auto& in) { return in[0] * 2.0 + 1.0; }, {big}));
  EXPECT_TRUE(parity([](const auto& in) { return in[0].t() * in[0].t(); }, {big}));
}

// Every elementwise op of the tests' table (tests/support/op_info.h), on float32 inputs and, for
// the unary ones, on a transposed view; with more cases the table does not have.
TEST_F(CudaParity, ElementwiseOpsOfTheTableOnContiguousAndTransposedInputs) {
  for (const testing::OpInfo& op : testing::elementwise_ops()) {
    std::vector<Tensor> in = op.sample_inputs(kFloat32, 10);
    for (Tensor& x : in) x = x.detach();
    EXPECT_TRUE(parity(op.fn, in)) << op.name;
    if (in.size() == 1) {
      EXPECT_TRUE(parity([&](const auto& v) { return op.fn({v[0].t()}); }, in))
          << op.name << " on a transposed view";
    }
    if (op.integers) {
      EXPECT_TRUE(parity(op.fn, op.sample_inputs(kInt64, 20))) << op.name << " int64";
    }
  }
  const Tensor any = randn_cpu({7, 9}, 10) * 2.0;
  const Tensor positive = uniform_cpu({7, 9}, 11, 0.2, 3.0);
  struct Case {
    const char* name;
    Fn fn;
    const Tensor* input;
  };
  const std::vector<Case> cases = {
      {"sign", [](const auto& in) { return sign(in[0]); }, &any},
      {"sigmoid of large values", [](const auto& in) { return sigmoid(in[0] * 10.0); }, &any},
      {"pow 3", [](const auto& in) { return pow(in[0], 3.0); }, &any},
      {"pow 2", [](const auto& in) { return pow(in[0], 2.0); }, &any},
      {"pow 0.5", [](const auto& in) { return pow(in[0], 0.5); }, &positive},
      {"clamp max", [](const auto& in) { return clamp(in[0], std::nullopt, 0.3); }, &any},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(parity(c.fn, {*c.input})) << c.name;
    EXPECT_TRUE(parity([&](const auto& in) { return c.fn({in[0].t()}); }, {*c.input}))
        << c.name << " on a transposed view";
  }
}

TEST_F(CudaParity, UnaryOpsOnInt64AndBool) {
  const Tensor ints = randint_cpu(-5, 6, {4, 5}, 12);
  for (auto fn : std::vector<Fn>{
           [](const auto& in) { return neg(in[0]); },
           [](const auto& in) { return abs(in[0]); },
           [](const auto& in) { return sign(in[0]); },
           [](const auto& in) { return square(in[0]); },
           [](const auto& in) { return relu(in[0]); },
           [](const auto& in) { return clamp(in[0], -2.0, 3.0); },
           [](const auto& in) { return logical_not(in[0]); },
           [](const auto& in) { return logical_not(in[0].gt(0.0)); },
       }) {
    EXPECT_TRUE(parity(fn, {ints}));
  }
  // The kernels refuse what the CPU kernels refuse, with the same message.
  Tensor out = empty({4, 5}, TensorOptions(kInt64).device(kGpu));
  EXPECT_SG_ERROR(backend_for(kGpu).unary(UnaryOp::Exp, on_gpu(ints), out, 0, 0),
                  "exp: not defined for int64 tensors");
  EXPECT_SG_ERROR(backend_for(kGpu).binary(BinaryOp::Div, on_gpu(ints), on_gpu(ints), out),
                  "div: not defined for int64 tensors");
}

TEST_F(CudaParity, BinaryOpsBroadcastAndStrided) {
  const Tensor a = randn_cpu({4, 1, 5}, 20);
  const Tensor b = randn_cpu({3, 1}, 21);
  const Tensor positive = uniform_cpu({4, 3, 5}, 22, 0.5, 2.0);
  const Tensor c = randn_cpu({5, 3, 4}, 23);
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"add", [](const auto& in) { return add(in[0], in[1]); }},
      {"add alpha", [](const auto& in) { return add(in[0], in[1], 2.5); }},
      {"sub", [](const auto& in) { return sub(in[0], in[1]); }},
      {"mul", [](const auto& in) { return mul(in[0], in[1]); }},
      {"div", [](const auto& in) { return div(in[0], in[1] + 3.0); }},
      {"maximum", [](const auto& in) { return maximum(in[0], in[1]); }},
      {"minimum", [](const auto& in) { return minimum(in[0], in[1]); }},
  };
  for (const auto& [name, fn] : ops) {
    EXPECT_TRUE(parity(fn, {a, b})) << name << " [4, 1, 5] with [3, 1]";
    // A permuted [4, 3, 5] view with a broadcast row.
    EXPECT_TRUE(parity(
        [&](const auto& in) {
          return fn({in[0].permute({2, 1, 0}), in[1]});
        },
        {c, randn_cpu({5}, 24)}))
        << name << " on a permuted view";
  }
  EXPECT_TRUE(parity([](const auto& in) { return pow(in[0], in[1]); }, {positive, a}));
  // Scalars (0-d tensors) on either side.
  EXPECT_TRUE(
      parity([](const auto& in) { return 2.0 - in[0] * 3.0 / (in[0] * in[0] + 1.0); }, {a}));
  // Ties in maximum/minimum split the gradient: equal values on purpose.
  const Tensor tied = halves_cpu({6, 4}, 25);
  EXPECT_TRUE(
      parity([](const auto& in) { return maximum(in[0], in[1]); }, {tied, halves_cpu({6, 4}, 26)}));
}

TEST_F(CudaParity, ComparisonsAndLogicGiveBool) {
  const Tensor a = halves_cpu({5, 6}, 30), b = halves_cpu({6}, 31);
  for (auto fn : std::vector<Fn>{
           [](const auto& in) { return eq(in[0], in[1]); },
           [](const auto& in) { return ne(in[0], in[1]); },
           [](const auto& in) { return lt(in[0], in[1]); },
           [](const auto& in) { return le(in[0].t().t(), in[1]); },
           [](const auto& in) { return gt(in[0], in[1]); },
           [](const auto& in) { return ge(in[0], in[1]); },
           [](const auto& in) { return logical_and(in[0].gt(0.0), in[1].lt(1.0)); },
           [](const auto& in) { return logical_or(in[0].gt(0.0), in[1].lt(1.0)); },
           [](const auto& in) { return eq(in[0].gt(0.0), in[1].gt(0.0)); },
           [](const auto& in) { return logical_and(in[0], in[1]); },
       }) {
    EXPECT_TRUE(parity(fn, {a, b}));
  }
}

TEST_F(CudaParity, Int64Arithmetic) {
  const Tensor a = randint_cpu(-50, 50, {4, 5}, 32), b = randint_cpu(1, 9, {5}, 33);
  for (auto fn : std::vector<Fn>{
           [](const auto& in) { return in[0] + in[1]; },
           [](const auto& in) { return in[0] - in[1] * 3.0; },
           [](const auto& in) { return maximum(in[0], in[1]); },
           [](const auto& in) { return in[0] / in[1]; },  // true division: float32
       }) {
    EXPECT_TRUE(parity(fn, {a, b}));
  }
}

// ---- reductions -------------------------------------------------------------------------------

TEST_F(CudaParity, SumMeanVarOverEveryKindOfDims) {
  const Tensor x = randn_cpu({4, 5, 6}, 40);
  const std::vector<std::pair<Dims, bool>> cases = {{{}, false},  {{0}, false},   {{1}, true},
                                                    {{2}, false}, {{0, 2}, true}, {{-1, 0}, false}};
  for (const auto& [dims, keepdim] : cases) {
    const std::string what = fmt::format("dims {} keepdim {}", dims, keepdim);
    const Dims d = dims;
    const bool k = keepdim;
    EXPECT_TRUE(parity([&](const auto& in) { return sum(in[0], d, k); }, {x})) << "sum " << what;
    EXPECT_TRUE(parity([&](const auto& in) { return mean(in[0].transpose(0, 2), d, k); }, {x}))
        << "mean of a transposed view, " << what;
    EXPECT_TRUE(parity([&](const auto& in) { return var(in[0], d, 1, k); }, {x})) << "var " << what;
  }
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0].slice(1, 0, 5, 2), {1}); }, {x}));
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0].expand({3, 4, 5, 6}), {0, 3}); }, {x}));
}

TEST_F(CudaKernels, ReductionsTakeBothPathsAtLargeSizes) {
  // Rows: the reduced elements are adjacent (last dim, whole tensor). Columns: the outputs are
  // adjacent and the reduced elements are not (dim 0: a bias gradient).
  const Tensor x = randn_cpu({300, 1000}, 41);
  for (const Dims& dims : {Dims{1}, Dims{0}, Dims{}}) {
    EXPECT_TRUE(parity([&](const auto& in) { return sum(in[0], dims); }, {x}))
        << fmt::format("{}", dims);
    EXPECT_TRUE(parity([&](const auto& in) { return amax(in[0], dims); }, {x}))
        << fmt::format("{}", dims);
    EXPECT_TRUE(parity([&](const auto& in) { return sum(in[0].t(), dims); }, {x}))
        << fmt::format("{}", dims);
  }
  const Tensor tall = randn_cpu({100000, 3}, 42), wide = randn_cpu({2, 70000}, 43);
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0], {0}); }, {tall}));
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0], {1}); }, {tall}));
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0], {1}); }, {wide}));
  EXPECT_TRUE(parity([](const auto& in) { return in[0].sum(); }, {randn_cpu({1 << 21}, 44)}));
  // Sums over many rows are cut into chunks of rows (a second kernel adds the chunks).
  const Tensor many_rows = randn_cpu({5000, 70}, 46);
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0], {0}); }, {many_rows}));
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0].unsqueeze(1), {0, 1}); }, {many_rows}));
  // Rows read as float4s where a row starts on 16 bytes: rows of 1001 (every fourth row aligned),
  // and rows that start one float off (a view at offset 1), read one float at a time.
  const Tensor odd_rows = randn_cpu({37, 1001}, 48);
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0], {1}); }, {odd_rows}));
  EXPECT_TRUE(parity(
      [](const auto& in) {
        return sum(in[0].reshape({-1}).narrow(0, 1, 36000).view({36, 1000}), {1});
      },
      {odd_rows}));
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0], {0}); }, {odd_rows}))
      << "columns with a tail of fewer than four rows per thread";
  const Tensor many_int_rows = randint_cpu(-1000, 1000, {3000, 5}, 47);
  EXPECT_TRUE(parity([](const auto& in) { return sum(in[0], {0}); }, {many_int_rows}));
  const Tensor ints = randint_cpu(-1000, 1000, {513, 257}, 45);
  for (const Dims& dims : {Dims{1}, Dims{0}, Dims{}}) {
    EXPECT_TRUE(parity([&](const auto& in) { return sum(in[0], dims); }, {ints}))
        << fmt::format("{}", dims);
    EXPECT_TRUE(parity([&](const auto& in) { return amin(in[0], dims); }, {ints}))
        << fmt::format("{}", dims);
  }
}

TEST_F(CudaParity, MaxMinArgmaxWithTies) {
  // Halves have many ties: the first extreme wins the index, and amax splits its gradient.
  const Tensor x = halves_cpu({6, 7, 5}, 50);
  for (int64_t dim : {0, 1, 2}) {
    for (bool keepdim : {false, true}) {
      const std::string what = fmt::format("dim {} keepdim {}", dim, keepdim);
      EXPECT_TRUE(parity([&](const auto& in) { return max(in[0], dim, keepdim).first; }, {x}))
          << "max " << what;
      EXPECT_TRUE(parity([&](const auto& in) { return max(in[0], dim, keepdim).second; }, {x}))
          << "max indices " << what;
      EXPECT_TRUE(parity([&](const auto& in) { return min(in[0], dim, keepdim).first; }, {x}))
          << "min " << what;
      EXPECT_TRUE(parity([&](const auto& in) { return argmin(in[0], dim, keepdim); }, {x}))
          << "argmin " << what;
      EXPECT_TRUE(parity([&](const auto& in) { return argmax(in[0].transpose(0, 2), dim); }, {x}))
          << "argmax of a transposed view " << what;
    }
  }
  EXPECT_TRUE(parity([](const auto& in) { return amax(in[0], {0, 2}); }, {x}));
  EXPECT_TRUE(parity([](const auto& in) { return amin(in[0]); }, {x}));
  // Long rows (block reduction) with the maximum repeated far apart.
  Tensor row = halves_cpu({3, 5000}, 51);
  EXPECT_TRUE(parity([](const auto& in) { return argmax(in[0], 1); }, {row}));
}

TEST_F(CudaKernels, MaxPropagatesNaNAndReportsTheFirstOne) {
  std::vector<float> values = {1, 5, NAN, 7, NAN, 2};
  Tensor x = from_vector(values, {1, 6});
  auto [gpu_values, gpu_indices] = max(on_gpu(x), 1);
  EXPECT_TRUE(std::isnan(gpu_values.item<float>()));
  EXPECT_EQ(gpu_indices.item<int64_t>(), 2);
  Tensor col = from_vector(values, {6, 1});
  auto [col_values, col_indices] = min(on_gpu(col), 0);
  EXPECT_TRUE(std::isnan(col_values.item<float>()));
  EXPECT_EQ(col_indices.item<int64_t>(), 2);
}

TEST_F(CudaKernels, SumOfAnEmptyDimIsZero) {
  EXPECT_TRUE(matches(sum(zeros({3, 0}, TensorOptions().device(kGpu)), {1}), zeros({3}), "sum"));
  EXPECT_SG_ERROR(amax(zeros({3, 0}, TensorOptions().device(kGpu)), {1}), "amax");
}

// ---- matmul -----------------------------------------------------------------------------------

TEST_F(CudaParity, MatmulShapesTransposesAndBroadcasts) {
  const Tensor m = randn_cpu({6, 4}, 60), k = randn_cpu({4, 5}, 61);
  const Tensor batch_a = randn_cpu({3, 6, 4}, 62), batch_b = randn_cpu({3, 4, 5}, 63);
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); }, {m, k})) << "2-D";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); }, {batch_a, batch_b}))
      << "batched";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); }, {batch_a, k}))
      << "a stack times one matrix";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); }, {m, batch_b}))
      << "one matrix times a stack (batch stride 0)";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); },
                     {randn_cpu({2, 1, 6, 4}, 64), batch_b}))
      << "broadcast batch dims";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0].t(), in[1].t()); },
                     {randn_cpu({4, 6}, 65), randn_cpu({5, 4}, 66)}))
      << "both operands transposed views";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1].transpose(-2, -1)); },
                     {batch_a, randn_cpu({3, 5, 4}, 67)}))
      << "Q·Kᵀ";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0].slice(1, 0, 8, 2), in[1]); },
                     {randn_cpu({6, 8}, 68), k}))
      << "every other column (copied first)";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); }, {randn_cpu({4}, 69), k}))
      << "vector · matrix";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); }, {m, randn_cpu({4}, 70)}))
      << "matrix · vector";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); },
                     {randn_cpu({4}, 71), randn_cpu({4}, 72)}))
      << "dot";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); },
                     {randn_cpu({1, 4}, 73), randn_cpu({4, 1}, 74)}))
      << "1x1 result";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); },
                     {randn_cpu({3, 0}, 75), randn_cpu({0, 2}, 76)}))
      << "K = 0";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1]); },
                     {randn_cpu({5, 3}, 77, kFloat64), randn_cpu({3, 2}, 78, kFloat64)}))
      << "float64";
  EXPECT_TRUE(parity([](const auto& in) { return matmul(in[0], in[1].t()); },
                     {randn_cpu({130, 257}, 79), randn_cpu({190, 257}, 80)}))
      << "larger";
  // fused_linear: the product accumulated onto the bias (cuBLAS's beta = 1), on [B, T, in] and on
  // a transposed input.
  EXPECT_TRUE(parity([](const auto& in) { return fused_linear(in[0], in[1], in[2]); },
                     {randn_cpu({2, 7, 5}, 83), randn_cpu({6, 5}, 84), randn_cpu({6}, 85)}))
      << "fused_linear";
  EXPECT_TRUE(parity([](const auto& in) { return fused_linear(in[0].t(), in[1], in[2]); },
                     {randn_cpu({5, 9}, 86), randn_cpu({6, 5}, 87), randn_cpu({6}, 88)}))
      << "fused_linear, transposed input";
}

TEST_F(CudaKernels, GemmTakesBatchStrideZeroAndTransposedViewsWithoutCopies) {
  // a: one [M, K] matrix seen as a batch of 4 (stride 0); b: a batch of transposed views.
  Tensor a = randn_cpu({1, 3, 5}, 81), b = randn_cpu({4, 2, 5}, 82);
  Tensor a_batch = a.expand({4, 3, 5});
  Tensor b_t = b.transpose(1, 2);  // [4, 5, 2]
  Tensor out_cpu = empty({4, 3, 2}), out_gpu = empty({4, 3, 2}, TensorOptions().device(kGpu));
  backend_for(kCPU).gemm(a_batch, b_t, out_cpu, /*accumulate=*/false);
  backend_for(kGpu).gemm(on_gpu(a).expand({4, 3, 5}), on_gpu(b).transpose(1, 2), out_gpu,
                         /*accumulate=*/false);
  EXPECT_TRUE(matches(out_gpu, out_cpu, "gemm"));
}

// ---- softmax ----------------------------------------------------------------------------------

TEST_F(CudaParity, SoftmaxAndLogSoftmaxAlongEveryDim) {
  const Tensor x = randn_cpu({3, 4, 10}, 90) * 3.0;
  for (int64_t dim : {0, 1, 2, -1}) {
    EXPECT_TRUE(parity([&](const auto& in) { return softmax(in[0], dim); }, {x})) << dim;
    EXPECT_TRUE(parity([&](const auto& in) { return log_softmax(in[0], dim); }, {x})) << dim;
    EXPECT_TRUE(parity([&](const auto& in) { return softmax(in[0].transpose(0, 2), dim); }, {x}))
        << dim << " on a transposed view";
  }
  // Rows longer than a warp handles (one block per row), and a 0-d input.
  const Tensor wide = randn_cpu({5, 3000}, 91) * 4.0;
  EXPECT_TRUE(parity([](const auto& in) { return softmax(in[0], 1); }, {wide}));
  EXPECT_TRUE(parity([](const auto& in) { return log_softmax(in[0], 1); }, {wide}));
  EXPECT_TRUE(parity([](const auto& in) { return softmax(in[0], 0); }, {scalar_tensor(2.0)}));
}

TEST_F(CudaParity, LongFloatRowsInRegistersAndOnTheGeneralPath) {
  // float32 rows longer than a warp handles live in the block's registers when their length is a
  // multiple of 4 and they are aligned (backend/cuda/row_in_registers.cuh): 1, 2, 4 or 8 float4s
  // per thread, the last ones partly empty; the rest take the general path (32772: too long;
  // 1030: not a multiple of 4). softmax's and layer_norm's backward hold two rows, so they leave
  // registers above 8192.
  for (int64_t D : {1028, 3000, 4100, 8192, 12000, 32768, 32772, 1030}) {
    const Tensor x = randn_cpu({3, D}, 300 + static_cast<uint64_t>(D)) * 4.0;
    const Tensor w = randn_cpu({D}, 301), b = randn_cpu({D}, 302);
    EXPECT_TRUE(parity([](const auto& in) { return softmax(in[0], 1); }, {x})) << D;
    EXPECT_TRUE(parity([](const auto& in) { return log_softmax(in[0], 1); }, {x})) << D;
    EXPECT_TRUE(parity([&](const auto& in) { return fused_layer_norm(in[0], {D}, in[1], in[2]); },
                       {x, w, b}))
        << D;
    EXPECT_TRUE(parity([&](const auto& in) { return fused_layer_norm(in[0], {D}); }, {x})) << D;
  }
  // Many rows per block: layer_norm's backward adds dweight and dbias up over the rows a block
  // visits (rows up to 4096), with and without a bias.
  const Tensor tall = randn_cpu({2000, 2048}, 305) * 2.0 + 0.5;
  const Tensor w_tall = randn_cpu({2048}, 306), b_tall = randn_cpu({2048}, 307);
  EXPECT_TRUE(parity([](const auto& in) { return fused_layer_norm(in[0], {2048}, in[1], in[2]); },
                     {tall, w_tall, b_tall}));
  EXPECT_TRUE(parity([](const auto& in) { return fused_layer_norm(in[0], {2048}, in[1]); },
                     {tall, w_tall}));
  // Rows that start 4 bytes into their storage: contiguous, but not aligned for float4 loads.
  const Tensor flat = randn_cpu({3 * 2048 + 1}, 303);
  auto misaligned = [](const Tensor& t) { return t.narrow(0, 1, 3 * 2048).view({3, 2048}); };
  EXPECT_TRUE(parity([&](const auto& in) { return softmax(misaligned(in[0]), 1); }, {flat}));
  EXPECT_TRUE(
      parity([&](const auto& in) { return fused_layer_norm(misaligned(in[0]), {2048}); }, {flat}));
  // A row of all -inf is NaN, and a NaN makes its row NaN, in registers as on the CPU.
  Tensor special = randn_cpu({2, 2048}, 304);
  special.narrow(0, 0, 1).fill_(-std::numeric_limits<double>::infinity());
  special.data_ptr<float>()[2048 + 7] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(matches(softmax(on_gpu(special), 1), softmax(special, 1), "softmax"));
}

TEST_F(CudaParity, MaskedAttentionWeights) {
  // The attention pattern: scores masked with the lowest float, softmax, masked again; a fully
  // masked row becomes uniform, then zero.
  const Tensor scores = randn_cpu({2, 2, 5, 5}, 92);
  Tensor mask = ones({5, 5}).tril().gt(0.0);
  std::vector<bool> pad = {true, true, true, false, false};
  Tensor key_ok = from_vector(std::vector<bool>(pad), {1, 1, 1, 5});
  EXPECT_TRUE(parity(
      [&](const auto& in) {
        Tensor blocked = logical_not(logical_and(in[1], in[2]));
        Tensor w = softmax(in[0].masked_fill(blocked, std::numeric_limits<float>::lowest()), -1);
        return w.masked_fill(blocked, 0.0);
      },
      {scores, mask, key_ok}));
}

TEST_F(CudaKernels, SoftmaxBackwardAlongAMiddleDim) {
  const Tensor y = softmax(randn_cpu({7, 5, 3}, 93), 1), g = randn_cpu({7, 5, 3}, 94);
  for (bool log : {false, true}) {
    Tensor out_cpu = empty_like(y), out_gpu = empty({7, 5, 3}, TensorOptions().device(kGpu));
    backend_for(kCPU).softmax_backward(g, y, 1, log, out_cpu);
    backend_for(kGpu).softmax_backward(on_gpu(g), on_gpu(y), 1, log, out_gpu);
    EXPECT_TRUE(matches(out_gpu, out_cpu, log ? "log_softmax backward" : "softmax backward"));
  }
}

// ---- masking, indexing, joining -------------------------------------------------------------

TEST_F(CudaParity, WhereMaskedFillTrilTriu) {
  const Tensor a = randn_cpu({4, 5}, 100), b = randn_cpu({5}, 101);
  const Tensor condition = randn_cpu({4, 1}, 102).gt(0.0);
  EXPECT_TRUE(parity([](const auto& in) { return where(in[2], in[0], in[1]); }, {a, b, condition}));
  EXPECT_TRUE(parity([](const auto& in) { return where(in[2], in[0].t().t(), 2.0 * in[1]); },
                     {a, b, condition}));
  EXPECT_TRUE(parity([](const auto& in) { return in[0].masked_fill(in[1], -7.0); },
                     {a, randn_cpu({5}, 103).gt(0.0)}));
  for (int64_t diagonal : {-1, 0, 2}) {
    EXPECT_TRUE(parity([&](const auto& in) { return tril(in[0], diagonal); }, {a})) << diagonal;
    EXPECT_TRUE(parity([&](const auto& in) { return triu(in[0].t(), diagonal); }, {a})) << diagonal;
  }
  const Tensor ints = randint_cpu(0, 9, {4, 5}, 104);
  EXPECT_TRUE(
      parity([](const auto& in) { return where(in[1], in[0], in[0] * 2.0); }, {ints, condition}));
}

TEST_F(CudaParity, IndexSelectGatherEmbeddingOneHot) {
  const Tensor x = randn_cpu({6, 4, 3}, 110);
  const Tensor rows = from_vector(std::vector<int64_t>{5, 0, 5, 2, 2, 2}, {6});
  EXPECT_TRUE(parity([](const auto& in) { return index_select(in[0], 0, in[1]); }, {x, rows}));
  EXPECT_TRUE(parity([](const auto& in) { return index_select(in[0], 1, in[1]); },
                     {x, from_vector(std::vector<int64_t>{3, 3, 0}, {3})}));
  EXPECT_TRUE(parity([](const auto& in) { return index_select(in[0].transpose(0, 2), 2, in[1]); },
                     {x, rows}))
      << "a transposed input (made contiguous by the op)";
  const Tensor index = randint_cpu(0, 4, {6, 7, 3}, 111);
  EXPECT_TRUE(parity([](const auto& in) { return gather(in[0], 1, in[1]); }, {x, index}));
  EXPECT_TRUE(parity([](const auto& in) { return gather(in[0], 0, in[1]); },
                     {x, randint_cpu(0, 6, {2, 4, 2}, 112)}))
      << "an index smaller than the input";
  const Tensor weight = randn_cpu({10, 8}, 113);
  const Tensor ids = randint_cpu(0, 10, {3, 7}, 114);
  EXPECT_TRUE(parity([](const auto& in) { return embedding(in[0], in[1]); }, {weight, ids}));
  EXPECT_TRUE(parity([](const auto& in) { return embedding(in[0], in[1], 0); }, {weight, ids}))
      << "padding_idx 0";
  EXPECT_TRUE(parity([](const auto& in) { return one_hot(in[0], 10); }, {ids}));
}

TEST_F(CudaKernels, IndexAddAndScatterAddAccumulateDuplicates) {
  // 20000 additions into 5 rows: the atomics must not lose any.
  const Tensor src = randn_cpu({20000, 3}, 120, kFloat64);
  const Tensor index = randint_cpu(0, 5, {20000}, 121);
  for (DType dtype : {kFloat32, kFloat64, kInt64}) {
    Tensor s = dtype == kInt64 ? randint_cpu(-9, 9, {20000, 3}, 122) : src.to(dtype);
    Tensor out_cpu = zeros({5, 3}, dtype),
           out_gpu = zeros({5, 3}, TensorOptions(dtype).device(kGpu));
    backend_for(kCPU).index_add(out_cpu, 0, index, s);
    backend_for(kGpu).index_add(out_gpu, 0, on_gpu(index), on_gpu(s));
    EXPECT_TRUE(matches(out_gpu, out_cpu, fmt::format("index_add {}", dtype)));

    Tensor target = randint_cpu(0, 3, {20000, 3}, 123);
    Tensor scattered_cpu = zeros({20000, 3}, dtype);
    Tensor scattered_gpu = zeros({20000, 3}, TensorOptions(dtype).device(kGpu));
    backend_for(kCPU).scatter_add(scattered_cpu, 1, target, s);
    backend_for(kGpu).scatter_add(scattered_gpu, 1, on_gpu(target), on_gpu(s));
    EXPECT_TRUE(matches(scattered_gpu, scattered_cpu, fmt::format("scatter_add {}", dtype)));
  }
}

// Deterministic mode (autograd/deterministic.h): index_add and scatter_add add each target's
// values in position order, the CPU's loop order, so the GPU gives the CPU's bits, run after run;
// with an outer and an inner dim around the indexed one, and targets no position names.
TEST_F(CudaKernels, DeterministicIndexAddAndScatterAddGiveTheCpusBits) {
  const DeterministicAlgorithmsGuard deterministic(true);
  const Tensor index = randint_cpu(0, 6, {3000}, 124);  // rows 0-5 of 7: row 6 gets nothing
  const Tensor target = randint_cpu(0, 5, {40, 700}, 125);
  for (DType dtype : {kFloat32, kFloat64, kInt64}) {
    const Tensor src = dtype == kInt64 ? randint_cpu(-9, 9, {3, 3000, 33}, 126)
                                       : randn_cpu({3, 3000, 33}, 126, dtype);
    const Tensor start =
        dtype == kInt64 ? randint_cpu(-9, 9, {3, 7, 33}, 127) : randn_cpu({3, 7, 33}, 127, dtype);
    Tensor out_cpu = start.clone();
    backend_for(kCPU).index_add(out_cpu, 1, index, src);
    for (int run = 0; run < 2; ++run) {
      Tensor out_gpu = on_gpu(start);
      backend_for(kGpu).index_add(out_gpu, 1, on_gpu(index), on_gpu(src));
      EXPECT_TRUE(testing::tensors_equal(out_gpu.to(kCPU), out_cpu))
          << "index_add " << dtype << ", run " << run;
    }
    const Tensor values =
        dtype == kInt64 ? randint_cpu(-9, 9, {40, 700}, 128) : randn_cpu({40, 700}, 128, dtype);
    Tensor scattered_cpu = zeros({40, 6}, dtype);
    backend_for(kCPU).scatter_add(scattered_cpu, 1, target, values);
    for (int run = 0; run < 2; ++run) {
      Tensor scattered_gpu = zeros({40, 6}, TensorOptions(dtype).device(kGpu));
      backend_for(kGpu).scatter_add(scattered_gpu, 1, on_gpu(target), on_gpu(values));
      EXPECT_TRUE(testing::tensors_equal(scattered_gpu.to(kCPU), scattered_cpu))
          << "scatter_add " << dtype << ", run " << run;
    }
  }
  // The embedding's backward, through the op: the weight's gradient is the CPU's, bit for bit.
  const Tensor weight = randn_cpu({11, 16}, 129).requires_grad_(true);
  const Tensor ids = randint_cpu(0, 11, {64, 20}, 130);
  embedding(weight, ids).pow(2.0).sum().backward();
  const Tensor weight_gpu = on_gpu(weight.detach()).requires_grad_(true);
  embedding(weight_gpu, on_gpu(ids)).pow(2.0).sum().backward();
  EXPECT_TRUE(testing::tensors_equal(weight_gpu.grad().to(kCPU), weight.grad()));
}

TEST_F(CudaKernels, DeterministicIndexAddReportsABadIndex) {
  if (kSelfTest) GTEST_SKIP() << "the CPU throws at once";
  // As in the default mode, the kernel notes the bad index and a later call reports it (each
  // launch and its read back inside one expectation: the report may come at either).
  const DeterministicAlgorithmsGuard deterministic(true);
  auto add_rows = [](const std::vector<int64_t>& rows) {
    Tensor out = on_gpu(zeros({3, 4}));
    backend_for(kGpu).index_add(out, 0, on_gpu(from_vector(rows, {3})),
                                on_gpu(randn_cpu({3, 4}, 131)));
    return out.to(kCPU);
  };
  auto scatter_columns = [](const std::vector<int64_t>& columns) {
    Tensor out = on_gpu(zeros({3, 4}));
    backend_for(kGpu).scatter_add(out, 1, on_gpu(from_vector(columns, {3, 1})),
                                  on_gpu(randn_cpu({3, 1}, 132)));
    return out.to(kCPU);
  };
  EXPECT_SG_ERROR(add_rows({2, 7, 0}), "index_add: index 7 is out of range for dim 0 of size 3");
  EXPECT_SG_ERROR(scatter_columns({0, 9, 1}),
                  "scatter_add: index 9 is out of range for dim 1 of size 4");
  EXPECT_EQ(add_rows({2, 2, 0}).shape(), (Shape{3, 4})) << "the backend works after the errors";
}

TEST_F(CudaKernels, ABadIndexIsReportedAtTheNextCall) {
  if (kSelfTest) GTEST_SKIP() << "the CPU throws at once";
  // A kernel cannot throw: the bad index is noted and the error comes from a later call (at the
  // latest the copy back to the host), naming the op, the index and the size.
  Tensor x = on_gpu(randn_cpu({3, 4}, 130));
  Tensor index = on_gpu(from_vector(std::vector<int64_t>{0, 9, 1}, {3, 1}));
  EXPECT_SG_ERROR(gather(x, 1, index).to(kCPU),
                  "gather: index 9 is out of range for dim 1 of size 4");
  // Reported once: the backend works normally afterwards.
  EXPECT_TRUE(matches(x * 2.0, randn_cpu({3, 4}, 130) * 2.0, "after the error"));
  Tensor rows = on_gpu(from_vector(std::vector<int64_t>{-1}, {1}));
  EXPECT_SG_ERROR(index_select(x, 0, rows).to(kCPU), "index_select: index -1 is out of range");
  // The ops that skip their host checks on a GPU (Note [Index checks on the device]) name
  // themselves, as their CPU checks do.
  Tensor ids = on_gpu(from_vector(std::vector<int64_t>{2, 7, 0}, {3}));
  EXPECT_SG_ERROR(embedding(x, ids).to(kCPU),
                  "embedding: token id 7 is out of range for 3 embeddings (found by a CUDA kernel");
  Tensor targets = on_gpu(from_vector(std::vector<int64_t>{1, -100, 4}, {3}));
  EXPECT_SG_ERROR(cross_entropy(x, targets).item<double>(),
                  "cross_entropy: target 4 is out of range for 4 classes");
  EXPECT_SG_ERROR(one_hot(ids, 5).to(kCPU), "one_hot: class value 7 is out of range for 5 classes");
  // Targets equal to ignore_index are no error, and the mean counts only the others.
  EXPECT_NEAR(
      cross_entropy(x, on_gpu(from_vector(std::vector<int64_t>{1, -100, 3}, {3}))).item<double>(),
      cross_entropy(x.to(kCPU), from_vector(std::vector<int64_t>{1, -100, 3}, {3})).item<double>(),
      1e-5);
}

TEST_F(CudaParity, CatStackSplitChunk) {
  const Tensor a = randn_cpu({2, 3}, 140), b = randn_cpu({3, 3}, 141), c = randn_cpu({3, 2}, 142);
  EXPECT_TRUE(parity([](const auto& in) { return cat({in[0], in[1]}, 0); }, {a, b}));
  EXPECT_TRUE(parity(
      [](const auto& in) {
        return cat({in[0].t(), in[1]}, 1);
      },
      {b, c}))
      << "a transposed part";
  EXPECT_TRUE(parity([](const auto& in) { return stack({in[0], in[1].t()}, 1); }, {b, b}));
  EXPECT_TRUE(
      parity([](const auto& in) { return split(in[0], 2, 1)[1] * 3.0; }, {randn_cpu({4, 5}, 143)}));
  EXPECT_TRUE(
      parity([](const auto& in) { return chunk(in[0], 3, 0)[2].exp(); }, {randn_cpu({7, 2}, 144)}));
}

// ---- the rest of the op table ------------------------------------------------------------------

TEST_F(CudaParity, ViewsAndCopies) {
  const Tensor x = randn_cpu({4, 5, 6}, 150);
  for (auto fn : std::vector<Fn>{
           [](const auto& in) {
             return in[0].permute({2, 0, 1}).contiguous();
           },
           [](const auto& in) {
             return in[0].transpose(0, 1).reshape({20, 6});
           },
           [](const auto& in) { return in[0].slice(2, 1, 6, 2).flatten(); },
           [](const auto& in) { return in[0].select(1, 3) * 1.5; },
           [](const auto& in) { return in[0].narrow(0, 1, 2).unsqueeze(1).squeeze(1); },
           [](const auto& in) {
             return in[0].select(2, 0).unsqueeze(2).expand({4, 5, 3}) * 1.0;
           },
           [](const auto& in) { return in[0].transpose(0, 2).clone(); },
           [](const auto& in) { return in[0].to(kFloat64); },
       }) {
    EXPECT_TRUE(parity(fn, {x}));
  }
}

TEST_F(CudaParity, DropoutDrawsTheSameMaskOnBothDevices) {
  // The mask is computed on each device from the default generator's counter: one seed, one mask.
  const Tensor x = randn_cpu({50, 40}, 160);
  EXPECT_TRUE(parity(
      [](const auto& in) {
        manual_seed(11);
        return dropout(in[0], 0.3);
      },
      {x}));
}

TEST_F(CudaKernels, UniformAndDropoutMasksAreBitForBitTheCpus) {
  // Counter-based (Note [Counter-based random numbers]): each element's number is a function of
  // (state, position) only, so the GPU's numbers are the CPU's exactly, and the generator moves
  // on by the same amount on both devices.
  for (DType dtype : {kFloat32, kFloat64}) {
    for (uint64_t state : {0ull, 42ull, 0xFFFFFFFFFFFFFF00ull}) {
      Tensor cpu = empty({3001}, dtype);
      Tensor gpu = empty({3001}, TensorOptions(dtype).device(kGpu));
      backend_for(kCPU).uniform(cpu, state);
      backend_for(kGpu).uniform(gpu, state);
      EXPECT_TRUE(testing::tensors_equal(gpu.to(kCPU), cpu)) << dtype << " state " << state;
    }
    const Tensor x = ones({257, 129}, dtype);
    manual_seed(77);
    Tensor mask_cpu = dropout(x, 0.4);
    const uint64_t after_cpu = default_generator().state();
    manual_seed(77);
    Tensor mask_gpu = dropout(on_gpu(x), 0.4);
    EXPECT_EQ(mask_gpu.device(), kGpu);
    EXPECT_TRUE(testing::tensors_equal(mask_gpu.to(kCPU), mask_cpu)) << dtype;
    EXPECT_EQ(default_generator().state(), after_cpu);
    EXPECT_FALSE(testing::tensors_equal(dropout(on_gpu(x), 0.4).to(kCPU), mask_cpu))
        << "the next call draws a new mask";
  }
}

TEST_F(CudaParity, CrossEntropyWithPaddingAndSmoothing) {
  const Tensor logits = randn_cpu({12, 7}, 170) * 2.0;
  std::vector<int64_t> targets = {0, 3, 6, -100, 2, 2, 5, -100, 1, 4, 0, 6};
  const Tensor target = from_vector(targets, {12});
  for (const char* reduction : {"mean", "sum", "none"}) {
    for (double smoothing : {0.0, 0.1}) {
      EXPECT_TRUE(parity(
          [&](const auto& in) { return cross_entropy(in[0], in[1], -100, smoothing, reduction); },
          {logits, target}))
          << reduction << " smoothing " << smoothing;
    }
  }
  EXPECT_TRUE(parity(
      [](const auto& in) {
        return cross_entropy(in[0].reshape({3, 4, 7}), in[1]);
      },
      {logits, randint_cpu(0, 7, {3, 4}, 171)}))
      << "3-D logits";
}

TEST_F(CudaParity, InPlaceUpdatesAsAnOptimizerMakesThem) {
  Tensor p_cpu = randn_cpu({6, 5}, 180), m = randn_cpu({6, 5}, 181),
         v = uniform_cpu({5}, 182, 1, 2);
  Tensor p_gpu = on_gpu(p_cpu), m_gpu = on_gpu(m), v_gpu = on_gpu(v);
  NoGradGuard no_grad;
  for (auto [p, mm, vv] : {std::tuple{p_cpu, m, v}, std::tuple{p_gpu, m_gpu, v_gpu}}) {
    p.mul_(0.9).add_(mm, 0.1);
    p.addcmul_(mm, mm, 0.01).addcdiv_(mm, vv, -0.5);
    p.sub_(vv, 2.0).div_(vv).add_(1.5).mul_(vv);
    p.t().slice(0, 0, 5, 2).zero_();  // a strided view
  }
  EXPECT_TRUE(matches(p_gpu, p_cpu, "in-place updates"));
}

// ---- the fused kernels (backend.h's optional ones) -------------------------------------------

TEST_F(CudaParity, FusedLayerNormForwardAndBackward) {
  const Tensor x = randn_cpu({6, 5, 40}, 200) * 3.0 + 1.0;
  const Tensor w = randn_cpu({40}, 201), b = randn_cpu({40}, 202);
  EXPECT_TRUE(parity([](const auto& in) { return fused_layer_norm(in[0], {40}, in[1], in[2]); },
                     {x, w, b}));
  EXPECT_TRUE(parity([](const auto& in) { return fused_layer_norm(in[0], {40}, in[1]); }, {x, w}))
      << "no bias";
  EXPECT_TRUE(
      parity([](const auto& in) { return fused_layer_norm(in[0].transpose(0, 1), {40}); }, {x}))
      << "no affine, a transposed input";
  EXPECT_TRUE(parity(
      [](const auto& in) {
        return fused_layer_norm(in[0], {5, 40}, in[1]);
      },
      {x, randn_cpu({5, 40}, 203)}))
      << "two normalized dims";
  // Rows longer than a warp handles (one block per row), and many rows for dweight's column sums.
  const Tensor wide = randn_cpu({3, 3000}, 204);
  EXPECT_TRUE(parity([](const auto& in) { return fused_layer_norm(in[0], {3000}, in[1], in[2]); },
                     {wide, randn_cpu({3000}, 205), randn_cpu({3000}, 206)}));
  const Tensor tall = randn_cpu({5000, 8}, 207);
  EXPECT_TRUE(parity([](const auto& in) { return fused_layer_norm(in[0], {8}, in[1], in[2]); },
                     {tall, randn_cpu({8}, 208), randn_cpu({8}, 209)}));
}

TEST_F(CudaParity, MaskedSoftmaxWithBroadcastMasksAndEmptyRows) {
  const Tensor scores = randn_cpu({2, 3, 6, 6}, 210) * 2.0;
  Tensor causal = ones({6, 6}).tril().gt(0.0);
  std::vector<bool> keys = {true,  true,  true,  true,  false, false,
                            false, false, false, false, false, false};
  Tensor key_ok = from_vector(keys, {2, 1, 1, 6});  // the second sequence keeps no key at all
  EXPECT_TRUE(
      parity([](const auto& in) { return masked_softmax(in[0], logical_and(in[1], in[2])); },
             {scores, causal, key_ok}));
  EXPECT_TRUE(parity([](const auto& in) { return masked_softmax(in[0], in[1]); }, {scores, key_ok}))
      << "a mask broadcast over heads and queries (stride 0)";
  const Tensor wide = randn_cpu({4, 2000}, 211);
  EXPECT_TRUE(parity([](const auto& in) { return masked_softmax(in[0], in[1]); },
                     {wide, randn_cpu({2000}, 212).gt(-0.5)}))
      << "rows longer than a warp handles";
}

TEST_F(CudaParity, FusedAdamStepsLikeTheCpu) {
  for (bool decoupled : {false, true}) {
    Tensor p = randn_cpu({7, 9}, 220), m = zeros({7, 9}), v = zeros({7, 9});
    Tensor p_gpu = on_gpu(p), m_gpu = on_gpu(m), v_gpu = on_gpu(v);
    NoGradGuard no_grad;
    for (int64_t step = 1; step <= 3; ++step) {
      const Tensor g = randn_cpu({7, 9}, 230 + static_cast<uint64_t>(step));
      adam_update_(p, g, m, v, 1e-2, 0.9, 0.98, 1e-9, 0.1, decoupled, step);
      adam_update_(p_gpu, on_gpu(g), m_gpu, v_gpu, 1e-2, 0.9, 0.98, 1e-9, 0.1, decoupled, step);
    }
    EXPECT_TRUE(matches(p_gpu, p, "param")) << "decoupled " << decoupled;
    EXPECT_TRUE(matches(m_gpu, m, "exp_avg")) << "decoupled " << decoupled;
    EXPECT_TRUE(matches(v_gpu, v, "exp_avg_sq")) << "decoupled " << decoupled;
  }
}

// One launch for many parameters (adam_update_foreach_): each parameter gets the bits its own
// update gives it, whatever its size (one element; several of the kernel's 16384-element chunks),
// dtype (float32 and float64 in one call) and step; with the step's numbers by value (eager) and
// read from the device (a CUDA graph's step).
TEST_F(CudaKernels, AdamForeachGivesEachParameterTheBitsOfItsOwnUpdate) {
  NoGradGuard no_grad;
  // On the CPU standing in for the GPU, the update from tensors is composed of ops, and so the
  // other must be too for the same bits.
  const CpuKernelsGuard kernels(kSelfTest ? CpuKernels::Reference : sg::cpu_kernels());
  const std::vector<Shape> shapes = {{1}, {3000}, {97, 130}, {5, 7}, {40000}};
  for (const bool from_device : {false, true}) {
    for (const bool decoupled : {false, true}) {
      std::vector<AdamParameter> together;
      std::vector<std::array<Tensor, 4>> alone;
      std::vector<int64_t> steps;
      for (size_t i = 0; i < shapes.size(); ++i) {
        const DType dtype = i == 2 ? kFloat64 : kFloat32;
        const uint64_t seed = 240 + 4 * i;
        const Tensor p = on_gpu(randn_cpu(shapes[i], seed, dtype));
        const Tensor g = on_gpu(randn_cpu(shapes[i], seed + 1, dtype));
        const Tensor m = on_gpu(randn_cpu(shapes[i], seed + 2, dtype));
        const Tensor v = on_gpu(randn_cpu(shapes[i], seed + 3, dtype).abs());
        const int64_t step = 1 + 2 * static_cast<int64_t>(i);
        Tensor scalars;
        if (from_device) {
          const AdamStepScalars s = adam_step_scalars(0.01, 0.9, 0.98, 0.1, step);
          scalars = on_gpu(
              from_vector(std::vector<double>{s.step_size, s.sqrt_bias_correction2, s.decay}, {3}));
        }
        together.push_back({p, g, m, v, from_device ? 0 : step, scalars});
        alone.push_back({p.clone(), g, m.clone(), v.clone()});
        steps.push_back(step);
      }
      adam_update_foreach_(together, 0.01, 0.9, 0.98, 1e-9, 0.1, decoupled);
      for (size_t i = 0; i < alone.size(); ++i) {
        auto& [p, g, m, v] = alone[i];
        adam_update_(p, g, m, v, 0.01, 0.9, 0.98, 1e-9, 0.1, decoupled, steps[i]);
        const std::string where =
            fmt::format("parameter {} decoupled {} from the device {}", i, decoupled, from_device);
        EXPECT_TRUE(testing::tensors_equal(together[i].param.to(kCPU), p.to(kCPU))) << where;
        EXPECT_TRUE(testing::tensors_equal(together[i].exp_avg.to(kCPU), m.to(kCPU))) << where;
        EXPECT_TRUE(testing::tensors_equal(together[i].exp_avg_sq.to(kCPU), v.to(kCPU))) << where;
      }
    }
  }
}

// ---- gradchecks on the GPU (float64) ------------------------------------------------------------

TEST_F(CudaGradcheck, MatmulWithTransposedAndBroadcastOperands) {
  EXPECT_TRUE(gpu_gradcheck([](const auto& in) { return matmul(in[0], in[1].transpose(-2, -1)); },
                            {leaf64({2, 3, 4}, 1), leaf64({5, 4}, 2)}));
}

TEST_F(CudaGradcheck, SoftmaxAndLogSoftmax) {
  EXPECT_TRUE(
      gpu_gradcheck([](const auto& in) { return softmax(in[0], 1); }, {leaf64({2, 4, 3}, 3)}));
  EXPECT_TRUE(gpu_gradcheck([](const auto& in) { return log_softmax(in[0].t(), -1); },
                            {leaf64({5, 3}, 4)}));
}

TEST_F(CudaGradcheck, LayerNormComposition) {
  EXPECT_TRUE(gpu_gradcheck(
      [](const auto& in) {
        Tensor mu = mean(in[0], {-1}, true);
        Tensor centered = in[0] - mu;
        Tensor var_ = mean(centered * centered, {-1}, true);
        return centered * (var_ + 1e-5).rsqrt() * in[1] + in[2];
      },
      {leaf64({3, 5}, 5), leaf64({5}, 6), leaf64({5}, 7)}));
}

TEST_F(CudaGradcheck, GatherIndexSelectAndCrossEntropy) {
  Tensor index = from_vector(std::vector<int64_t>{2, 0, 2, 1, 1, 3}, {3, 2});
  EXPECT_TRUE(gpu_gradcheck([](const auto& in) { return gather(in[0], 1, in[1]); },
                            {leaf64({3, 4}, 8), index}));
  Tensor rows = from_vector(std::vector<int64_t>{1, 1, 0}, {3});
  EXPECT_TRUE(gpu_gradcheck([](const auto& in) { return index_select(in[0], 0, in[1]); },
                            {leaf64({2, 3}, 9), rows}));
  Tensor target = from_vector(std::vector<int64_t>{1, -100, 3, 0}, {4});
  EXPECT_TRUE(gpu_gradcheck([](const auto& in) { return cross_entropy(in[0], in[1], -100, 0.1); },
                            {leaf64({4, 5}, 10), target}));
}

TEST_F(CudaGradcheck, FusedLayerNormAndMaskedSoftmax) {
  EXPECT_TRUE(
      gpu_gradcheck([](const auto& in) { return fused_layer_norm(in[0], {4}, in[1], in[2]); },
                    {leaf64({3, 4}, 16), leaf64({4}, 17), leaf64({4}, 18)}));
  Tensor mask =
      from_vector(std::vector<bool>{true, false, true, true, false, false, false, false}, {2, 4});
  EXPECT_TRUE(gpu_gradcheck([](const auto& in) { return masked_softmax(in[0], in[1]); },
                            {leaf64({2, 4}, 19), mask}));
}

TEST_F(CudaGradcheck, ReductionsAndBroadcastArithmetic) {
  EXPECT_TRUE(
      gpu_gradcheck([](const auto& in) { return var(in[0].t(), {1}); }, {leaf64({4, 3}, 11)}));
  EXPECT_TRUE(gpu_gradcheck([](const auto& in) { return amax(in[0], {0}) * in[1]; },
                            {leaf64({3, 4}, 12), leaf64({4}, 13)}));
  EXPECT_TRUE(gpu_gradcheck(
      [](const auto& in) { return div(in[0], in[1]) + pow(in[1], in[0].slice(1, 0, 1)); },
      {leaf64({3, 2}, 14), leaf64({2}, 15, 0.5, 2.0)}));
}

// ---- the caching allocator ----------------------------------------------------------------------

#if SCRATCHGRAD_HAS_CUDA && !defined(SG_CUDA_PARITY_ON_CPU)
TEST_F(CudaMemory, AFreedBlockIsReusedWithoutCudaMalloc) {
  const TensorOptions options = TensorOptions().device(kGpu);
  { Tensor warm = empty({1000}, options); }  // the bucket's first block
  const CudaMemoryStats before = cuda_memory_stats(0);
  for (int i = 0; i < 10; ++i) {
    Tensor t = empty({1000}, options);  // 4000 bytes: the 4096-byte bucket
    Tensor u = empty({900}, options);   // 3600 bytes: the same bucket, a second block
  }
  const CudaMemoryStats after = cuda_memory_stats(0);
  EXPECT_EQ(after.allocations - before.allocations, 20);
  EXPECT_LE(after.cuda_mallocs - before.cuda_mallocs, 1);  // at most the second block, once
  EXPECT_GE(after.cache_hits - before.cache_hits, 19);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
}

TEST_F(CudaMemory, StatsCountLiveBlocksAndEmptyCacheReturnsFreeOnes) {
  const TensorOptions options = TensorOptions().device(kGpu);
  const CudaMemoryStats start = cuda_memory_stats(0);
  {
    Tensor big = empty({3 << 20}, options);  // 12 MiB: a 2 MiB-multiple bucket
    const CudaMemoryStats live = cuda_memory_stats(0);
    EXPECT_EQ(live.allocated_bytes - start.allocated_bytes, 12 << 20);
    EXPECT_GE(live.peak_allocated_bytes, live.allocated_bytes);
  }
  EXPECT_EQ(cuda_memory_stats(0).allocated_bytes, start.allocated_bytes);
  cuda_empty_cache(0);
  const CudaMemoryStats emptied = cuda_memory_stats(0);
  EXPECT_EQ(emptied.reserved_bytes, emptied.allocated_bytes);
}

TEST_F(CudaMemory, ReadingBackCountsDeviceToHostCopies) {
  Tensor x = on_gpu(randn_cpu({4}, 190));
  const int64_t before = cuda_device_to_host_copies();
  Tensor y = exp(x) * 2.0 + x.sum();  // all on the device: no copy
  EXPECT_EQ(cuda_device_to_host_copies(), before);
  (void)y.to_vector<float>();
  EXPECT_EQ(cuda_device_to_host_copies(), before + 1);
  cuda_synchronize(0);
}

TEST_F(CudaMemory, UploadsAreStagedAndCountNoDeviceToHostCopy) {
  Backend& backend = backend_for(kGpu);
  // Work for the staged copies to queue behind: more uploads than the pool keeps per size.
  Tensor a = on_gpu(randn_cpu({2048, 2048}, 210)) / 45.0;
  Tensor y = a;
  for (int i = 0; i < 4; ++i) y = matmul(y, a);
  const int64_t copies = cuda_device_to_host_copies();
  const CudaStagingStats before = cuda_staging_stats(0);
  const std::vector<float> batch(1000, 1.0f);
  std::vector<Tensor> uploaded;
  for (int i = 0; i < 200; ++i) {
    uploaded.push_back(empty({1000}, TensorOptions(kFloat32).device(kGpu)));
    backend.copy_from_host(uploaded.back().raw_data(), batch.data(), batch.size() * sizeof(float));
  }
  // Over 64 MiB: the synchronous path.
  const std::vector<float> big(cuda::StagingPool::kMaxStagedUpload / sizeof(float) + 1, 2.0f);
  Tensor large = empty({static_cast<int64_t>(big.size())}, TensorOptions(kFloat32).device(kGpu));
  backend.copy_from_host(large.raw_data(), big.data(), big.size() * sizeof(float));
  const CudaStagingStats after = cuda_staging_stats(0);
  EXPECT_EQ(cuda_device_to_host_copies(), copies) << "an upload is no device-to-host copy";
  EXPECT_EQ(after.staged_uploads - before.staged_uploads, 200);
  EXPECT_EQ(after.synchronous_uploads - before.synchronous_uploads, 1);
  EXPECT_LE(after.pinned_bytes, static_cast<int64_t>(cuda::StagingPool::kMaxPinnedBytes));
  EXPECT_GE(after.buffers, 1);
  for (const Tensor& t : uploaded) EXPECT_EQ(t.sum().item<float>(), 1000.0f);
  const int64_t end = large.size(0);
  EXPECT_EQ(large.slice(0, end - 3, end).to_vector<float>(), std::vector<float>(3, 2.0f));
  cuda_synchronize(0);
}
#endif

}  // namespace
}  // namespace sg
