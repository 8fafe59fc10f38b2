// Tensor basics: metadata, factories, data access, conversions, printing.
#include "autograd/backend/backend.h"
#include "autograd/host_memory.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::tensors_equal;
using testing::tensors_near;

TEST(ShapeTest, ContiguousStridesAndBroadcast) {
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}), Strides{});
  EXPECT_EQ(broadcast_shapes("add", {3, 1}, {4}), (Shape{3, 4}));
  EXPECT_EQ(broadcast_shapes("add", {2, 1, 5}, {3, 1}), (Shape{2, 3, 5}));
  EXPECT_SG_ERROR(broadcast_shapes("add", {2, 3}, {4}),
                  "add: shapes [2, 3] and [4] cannot be broadcast (dim 1: 3 vs 4)");
  EXPECT_EQ(infer_size("view", {-1, 4}, 12), (Shape{3, 4}));
  EXPECT_SG_ERROR(infer_size("view", {-1, -1}, 12), "view: only one dimension can be -1");
  EXPECT_SG_ERROR(infer_size("view", {5, -1}, 12),
                  "view: shape [5, -1] is invalid for input of size 12");
  EXPECT_EQ(normalize_dim("sum", -1, 3), 2);
  EXPECT_SG_ERROR(normalize_dim("sum", 3, 3), "sum: dim 3 out of range for a 3-D tensor");
}

TEST(FactoryTest, ValuesShapesAndDtypes) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(ones({2}, kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(full({2}, 7.5, kFloat64).to_vector<double>(), (std::vector<double>{7.5, 7.5}));
  EXPECT_EQ(arange(0, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(arange(5).dtype(), kInt64);
  EXPECT_EQ(arange(0, 1, 0.25, kFloat32).to_vector<float>(),
            (std::vector<float>{0.0f, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(eye(2).to_vector<float>(), (std::vector<float>{1, 0, 0, 1}));
  EXPECT_EQ(tensor({{1, 2}, {3, 4}}).shape(), (Shape{2, 2}));
  EXPECT_EQ(scalar_tensor(3.0).dim(), 0);
  EXPECT_EQ(scalar_tensor(3.0).item<float>(), 3.0f);
  EXPECT_EQ(zeros_like(ones({3}, kFloat64)).dtype(), kFloat64);
  EXPECT_SG_ERROR(from_vector(std::vector<float>{1, 2, 3}, {2, 2}),
                  "from_vector: 3 values cannot fill shape [2, 2]");
  EXPECT_SG_ERROR(zeros({2, -1}), "empty: negative size in shape [2, -1]");
  EXPECT_SG_ERROR(zeros({2}, TensorOptions(kInt64).requires_grad(true)),
                  "can require grad, got int64");
  EXPECT_SG_ERROR(arange(0, 5, 0), "arange: step must be finite and non-zero, got 0");
}

TEST(FactoryTest, ValuesADtypeCannotHoldAreRefused) {
  // Each was an undefined conversion or a silent wrong tensor: arange(0, 1e30) had no elements,
  // randn in int64 was mostly zeros, full(NaN) in int64 was INT64_MIN.
  EXPECT_SG_ERROR(arange(0, 1e30, 1),
                  "arange: [0, 1e+30) in steps of 1 has 1e+30 elements, more than a tensor holds");
  EXPECT_SG_ERROR(arange(0, 1, 1e-300, kFloat64),
                  "in steps of 1e-300 has 9.999999999999999e+299 elements");
  EXPECT_SG_ERROR(arange(0, 5, NAN), "arange: step must be finite and non-zero, got nan");
  EXPECT_SG_ERROR(arange(0, 2, 0.5),
                  "arange: start 0 and step 0.5 must be whole numbers for dtype int64");
  EXPECT_EQ(arange(0, 2, 0.5, kFloat32).to_vector<float>(), (std::vector<float>{0, 0.5, 1, 1.5}));
  EXPECT_EQ(arange(0, 2.5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_SG_ERROR(rand({5}, kInt64), "rand: draws real numbers, not int64 values");
  EXPECT_SG_ERROR(randn({5}, kBool), "randn: draws real numbers, not bool values");
  EXPECT_SG_ERROR(full({2}, NAN, kInt64), "full: nan is not a value of dtype int64");
  EXPECT_SG_ERROR(full({2}, 1e30, kInt64), "full: 1e+30 is not a value of dtype int64");
  EXPECT_EQ(full({2}, -0x1p63, kInt64).to_vector<int64_t>()[0],
            std::numeric_limits<int64_t>::lowest());
  EXPECT_EQ(full({1}, NAN, kBool).to_vector<bool>(), std::vector<bool>{true});
}

TEST(FactoryTest, RandomIsSeededAndWellDistributed) {
  manual_seed(42);
  Tensor a = randn({1000});
  manual_seed(42);
  Tensor b = randn({1000});
  EXPECT_TRUE(tensors_equal(a, b));
  EXPECT_NEAR(a.mean().item<double>(), 0.0, 0.1);
  EXPECT_NEAR(a.var({0}).item<double>(), 1.0, 0.15);
  Tensor u = rand({2000}, kFloat64);
  EXPECT_GE(u.min().item<double>(), 0.0);
  EXPECT_LT(u.max().item<double>(), 1.0);
  EXPECT_NEAR(u.mean().item<double>(), 0.5, 0.03);
  Tensor r = randint(3, 7, {500});
  EXPECT_GE(r.min().item<int64_t>(), 3);
  EXPECT_LE(r.max().item<int64_t>(), 6);
}

TEST(GeneratorTest, StateRoundTrips) {
  Generator gen(7);
  gen.next_u64();
  uint64_t state = gen.state();
  double first = gen.next_normal();
  gen.set_state(state);
  EXPECT_EQ(gen.next_normal(), first);
}

TEST(GeneratorTest, CounterBasedNumbersAreTheStream) {
  // splitmix64's published first outputs for seed 0 (Vigna's reference implementation).
  EXPECT_EQ(random_u64_at(0, 1), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(random_u64_at(0, 2), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(random_u64_at(0, 3), 0x06C45D188009454Full);
  // Any number of the stream, computed alone, is the one next_u64() / next_uniform() reach.
  Generator gen(12345);
  const uint64_t start = gen.state();
  for (uint64_t k = 1; k <= 100; ++k) {
    if (k % 2 == 0) {
      EXPECT_EQ(gen.next_uniform(), uniform_at(start, k)) << k;
    } else {
      EXPECT_EQ(gen.next_u64(), random_u64_at(start, k)) << k;
    }
  }
  // take(n) hands out the state and skips n numbers, as n calls would.
  Generator a(9), b(9);
  EXPECT_EQ(a.take(1000), b.state());
  for (int i = 0; i < 1000; ++i) b.next_u64();
  EXPECT_EQ(a.state(), b.state());
  EXPECT_EQ(a.next_u64(), b.next_u64());
}

TEST(TensorTest, DataAccess) {
  Tensor t = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(t.at<float>({1, 2}), 6.0f);
  EXPECT_EQ(t.at<float>({-1, 0}), 4.0f);
  EXPECT_EQ(t.t().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.size(-1), 3);
  EXPECT_SG_ERROR(t.item<float>(), "item: the tensor has 6 elements (shape [2, 3])");
  EXPECT_SG_ERROR(t.data_ptr<double>(),
                  "data_ptr: the tensor is float32 but float64 was asked for");
  EXPECT_SG_ERROR(t.at<float>({0}), "at: 1 indices given for a tensor of shape [2, 3]");
  EXPECT_SG_ERROR(Tensor().shape(), "tensor: this tensor is undefined");
}

TEST(TensorTest, DtypeConversion) {
  Tensor t = tensor({1.7, -2.2, 0.0});
  EXPECT_EQ(t.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 0}));
  EXPECT_EQ(t.to(kBool).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(t.to(kFloat64).dtype(), kFloat64);
  EXPECT_TRUE(t.to(kFloat32).is_same(t));  // no-op conversion returns the tensor itself
}

TEST(TensorTest, DtypeConversionIsDifferentiable) {
  // float64 -> float32 -> loss: the gradient comes back to the leaf in float64.
  Tensor x = tensor({1.5, -2.0, 4.0}, TensorOptions(kFloat64).requires_grad(true));
  Tensor w = tensor({3.0f, 0.5f, -1.0f});
  (x.to(kFloat32) * w).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().dtype(), kFloat64);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3.0, 0.5, -1.0}));
  // To an integer dtype there is no gradient, as in PyTorch.
  EXPECT_FALSE(x.to(kInt64).requires_grad());
}

TEST(TensorTest, CudaDeviceGivesAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is usable here: nothing to refuse";
  EXPECT_FALSE(cuda_unavailable_reason().empty());
  EXPECT_SG_ERROR(zeros({2}, TensorOptions().device(Device::cuda())), "cuda:0");
  EXPECT_EQ(Device::cuda(1).str(), "cuda:1");
}

TEST(PrintTest, LooksLikePyTorch) {
  EXPECT_EQ(tensor({{1, -0.5}, {2, 3}}).str(),
            "tensor([[ 1.0000, -0.5000],\n        [ 2.0000,  3.0000]])");
  EXPECT_EQ(arange(3).str(), "tensor([0, 1, 2])");
  EXPECT_EQ(scalar_tensor(2.5, kFloat64).str(), "tensor(2.5000, dtype=float64)");
  EXPECT_EQ(tensor({1, 2}).gt(1.5).str(), "tensor([false,  true])");
  Tensor x = ones({2}, TensorOptions().requires_grad(true));
  EXPECT_EQ(x.str(), "tensor([1.0000, 1.0000], requires_grad=true)");
  EXPECT_EQ((x * 2.0).str(), "tensor([2.0000, 2.0000], grad_fn=<mul>)");
  EXPECT_EQ(fmt::format("{}", arange(2)), "tensor([0, 1])");
}

TEST(PrintTest, SummarisesBigTensors) {
  std::string s = arange(2000).str();
  EXPECT_NE(s.find("..."), std::string::npos);
  EXPECT_NE(s.find("1999"), std::string::npos);
  EXPECT_EQ(s.find("1000"), std::string::npos);
  std::string m = zeros({100, 100}).str();
  EXPECT_NE(m.find("..."), std::string::npos);
  EXPECT_LT(m.size(), 1000u);
}

// A wrapped size product used to allocate room for 4 floats for a shape of 2^64 + 4.
TEST(FactoryHardening, EverySizeProductIsChecked) {
  const int64_t big = (int64_t{1} << 62) + 1;
  EXPECT_SG_ERROR(zeros({big, 4}), "has more elements than fit in a 64-bit size");
  EXPECT_SG_ERROR(empty({int64_t{1} << 32, int64_t{1} << 32}), "more elements than fit");
  // The element count fits, the bytes do not.
  EXPECT_SG_ERROR(empty({int64_t{1} << 61, 2}, kFloat64), "needs more bytes than fit");
  // A zero anywhere makes an empty tensor, whatever the other sizes.
  EXPECT_EQ(empty({big, 4, 0}).numel(), 0);
  // reshape's inferred size must not come from a wrapped product either.
  Tensor x = arange(0, 16, 1, kFloat32);
  EXPECT_SG_ERROR(x.reshape({big, 4, -1}), "more elements than fit");
  EXPECT_SG_ERROR(x.reshape({big, 4}), "more elements than fit");
}

TEST(FactoryHardening, AnImpossibleAllocationIsAnError) {
  // 2^50 bytes (a petabyte): more than the memory left, refused before anything is allocated
  // (autograd/host_memory.h).
  ASSERT_TRUE(available_host_memory().has_value());
  EXPECT_SG_ERROR(empty({int64_t{1} << 48}, kFloat32),
                  "empty: a float32 tensor of shape [281474976710656] needs 1048576.00 GiB");
  EXPECT_EQ(zeros({3}).sum().item<float>(), 0.0f);  // the allocator works on afterwards
#if SG_TEST_WITH_ASAN
  GTEST_SKIP() << "AddressSanitizer aborts on allocations this large instead of failing them";
#else
  // Where the memory left cannot be read, the system's refusal is an sg::Error too.
  for (CpuKernels kernels : {CpuKernels::Reference, CpuKernels::Fast}) {
    CpuKernelsGuard guard(kernels);
    EXPECT_SG_ERROR(backend_for(kCPU).allocate(size_t{1} << 50), "cpu: out of memory allocating");
  }
#endif
}

}  // namespace
}  // namespace sg
