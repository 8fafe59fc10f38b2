// bfloat16 on the GPU (autograd/backend/cuda/): conversions both ways with the CPU's bits, the
// copies that support bfloat16, refusals by name, autocast's products through cuBLAS against the
// exact product of the rounded operands, and the message for a GPU without bfloat16 (a training
// step under autocast: tests/nn/test_cuda_training.cpp). Every test skips without a
// usable GPU (scripts/gpu_tests.sh runs them on one); compiled with -DSG_CUDA_PARITY_ON_CPU
// (cuda_tests_on_cpu) the CPU stands in for the GPU, which checks the tests themselves.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "autograd/backend/cuda/bfloat16_support.h"
#include "tests/support/bfloat16_bound.h"
#include "tests/support/gpu_under_test.h"

namespace sg {
namespace {

using sg::testing::kGpu;
using sg::testing::kSelfTest;
// Tensor cores align the products of a group to the largest and truncate their partial sums, so
// a GPU product may be off by a few times the float32 bound of a sum rounded to nearest.
constexpr double kTensorCoreFactor = 4.0;

using testing::bfloat16_rounded;
using testing::within_float32_summation;

class CudaBFloat16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kSelfTest && !cuda_available()) GTEST_SKIP() << cuda_unavailable_reason();
  }
};

Tensor randn_cpu(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, gen);
}

// The bits of a bfloat16 tensor, as host integers; every NaN as one pattern (its payload is free).
std::vector<uint16_t> bits_of(const Tensor& h) {
  const Tensor host = h.to(kCPU).contiguous();
  std::vector<uint16_t> out(static_cast<size_t>(host.numel()));
  std::memcpy(out.data(), host.raw_data(), out.size() * sizeof(uint16_t));
  for (uint16_t& b : out) {
    if ((b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0) b = 0x7FC0;
  }
  return out;
}

TEST_F(CudaBFloat16, ConversionsGiveTheCpusBits) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {1.0f,
                               3.14159265f,
                               0.1f,
                               1.00390625f,
                               1.01171875f,
                               -0.0f,
                               inf,
                               -inf,
                               1e-40f,
                               3.3e38f,
                               3.4e38f,
                               -65537.0f,
                               std::numeric_limits<float>::quiet_NaN()};
  const Tensor random = randn_cpu({1000}, 1) * 1e3;
  for (float v : random.to_vector<float>()) values.push_back(v);
  const Tensor x = from_vector(values);
  const Tensor on_gpu = x.to(kGpu).to(kBFloat16);
  EXPECT_EQ(on_gpu.device(), kGpu);
  EXPECT_EQ(bits_of(on_gpu), bits_of(x.to(kBFloat16)));
  // And back, to every dtype, exactly.
  for (const DType dtype : {kFloat32, kFloat64, kInt64, kBool}) {
    SCOPED_TRACE(fmt::format("{}", dtype));
    const Tensor finite = on_gpu.narrow(0, 13, 1000);  // past the specials: int64 needs finite
    EXPECT_TRUE(testing::tensors_near(finite.to(dtype).to(kCPU).to(kFloat64),
                                      finite.to(kCPU).to(dtype).to(kFloat64), 0, 0));
  }
  // float64 rounds to float first, as on the CPU.
  const Tensor doubles = randn_cpu({500}, 2).to(kFloat64) * 7.0;
  EXPECT_EQ(bits_of(doubles.to(kGpu).to(kBFloat16)), bits_of(doubles.to(kBFloat16)));
}

TEST_F(CudaBFloat16, CopiesThatSupportBFloat16) {
  const Tensor x = (randn_cpu({4, 6}, 3) * 10.0).to(kBFloat16), g = x.to(kGpu);
  const Tensor index = tensor({3.0, 0.0, 3.0}, kInt64), mask = x.to(kFloat32) > 0.0;
  auto same = [](const Tensor& gpu, const Tensor& cpu) { return bits_of(gpu) == bits_of(cpu); };
  EXPECT_TRUE(same(g.t().contiguous(), x.t().contiguous()));
  EXPECT_TRUE(
      same(full({3}, 0.1, TensorOptions(kBFloat16).device(kGpu)), full({3}, 0.1, kBFloat16)));
  EXPECT_TRUE(same(g.index_select(0, index.to(kGpu)), x.index_select(0, index)));
  EXPECT_TRUE(same(g.gather(1, index.view({1, 3}).expand({4, 3}).to(kGpu)),
                   x.gather(1, index.view({1, 3}).expand({4, 3}))));
  EXPECT_TRUE(same(g.masked_fill(mask.to(kGpu), -2.0), x.masked_fill(mask, -2.0)));
  EXPECT_TRUE(same(cat({g, g.narrow(0, 1, 2)}, 0), cat({x, x.narrow(0, 1, 2)}, 0)));
  EXPECT_SG_ERROR(g.exp(), "exp: not supported for bfloat16");
  EXPECT_SG_ERROR(g.sum(), "sum: not supported for bfloat16");
  EXPECT_SG_ERROR(matmul(g, g.t()), "matmul: not supported for bfloat16");
}

// Autocast's products through cuBLAS: within the bound of the exact product of the rounded
// operands (a few times it: tensor cores), forward and backward, on every layout matmul makes.
TEST_F(CudaBFloat16, AutocastProductsAgainstTheExactProduct) {
  const Tensor a = randn_cpu({3, 20, 70}, 4), b = randn_cpu({3, 70, 33}, 5);
  const Tensor w = randn_cpu({48, 70}, 6), bias = randn_cpu({48}, 7);
  const Tensor ra = bfloat16_rounded(a), rb = bfloat16_rounded(b), rw = bfloat16_rounded(w);
  AutocastGuard autocast(kBFloat16);
  AutocastCpuMinProductGuard every_product(0);  // without a GPU these run on the CPU, all rounded
  const Tensor ga = a.to(kGpu), gb = b.to(kGpu), gw = w.to(kGpu);
  const double f = kTensorCoreFactor;
  EXPECT_TRUE(within_float32_summation(matmul(ga, gb), ra, rb, Tensor(), f));
  EXPECT_TRUE(within_float32_summation(matmul(ga, gw.t()), ra, rw.t(), Tensor(), f));
  EXPECT_TRUE(within_float32_summation(matmul(ga.transpose(1, 2), ga), ra.transpose(1, 2), ra,
                                       Tensor(), f));
  EXPECT_TRUE(within_float32_summation(matmul(ga.select(0, 0), gb.select(0, 1)), ra.select(0, 0),
                                       rb.select(0, 1), Tensor(), f));
  const Tensor y = fused_linear(ga, gw, bias.to(kGpu));
  EXPECT_EQ(y.device(), kGpu);
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_TRUE(within_float32_summation(y, ra, rw.t(), bias.expand({3, 20, 48}), f));
  // Backward, outside the guard as in training: dW = Gᵀ·X from the rounded operands.
  Tensor leaf = gw.detach().requires_grad_(true);
  const Tensor g = randn_cpu({3, 20, 48}, 8);
  Tensor out = fused_linear(ga, leaf, bias.to(kGpu));
  AutocastGuard off(kBFloat16, false);
  out.backward(g.to(kGpu));
  EXPECT_TRUE(within_float32_summation(leaf.grad(), bfloat16_rounded(g).view({60, 48}).t(),
                                       ra.view({60, 70}), Tensor(), f));
}

TEST(CudaBFloat16Support, OlderGpusAreToldWhy) {
  EXPECT_EQ(cuda::bfloat16_products_unsupported_reason("cuda:0", 80), "");
  EXPECT_EQ(cuda::bfloat16_products_unsupported_reason("cuda:1", 90), "");
  const std::string reason = cuda::bfloat16_products_unsupported_reason("cuda:0", 75);
  EXPECT_NE(reason.find("cuda:0 (compute capability 7.5) has no bfloat16 tensor cores"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("without sg::AutocastGuard"), std::string::npos) << reason;
}

}  // namespace
}  // namespace sg
