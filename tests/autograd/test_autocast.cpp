// Autocast (autograd/autocast.h): which products read bfloat16 operands, forward and backward, on
// both CPU backends; the bound on their error; what stays float32; PyTorch's torch.autocast
// goldens; float64 gradchecks, which autocast leaves exact; and the CPU's size threshold, below
// which products stay float32.
#include <cmath>
#include <tuple>

#include "tests/support/bfloat16_bound.h"
#include "tests/support/golden.h"

namespace sg {
namespace {

using testing::bfloat16_rounded;
using testing::within_float32_summation;

// The products of these tests are small, so they run every product in bfloat16 (a threshold of
// 0, torch.autocast's rule); the threshold has tests of its own below.
class AutocastTest : public ::testing::Test {
 private:
  AutocastCpuMinProductGuard every_product_{0};
};

TEST_F(AutocastTest, GuardSetsAndRestoresTheState) {
  EXPECT_FALSE(is_autocast_enabled());
  {
    AutocastGuard outer(kBFloat16);
    EXPECT_TRUE(is_autocast_enabled());
    EXPECT_EQ(autocast_dtype(), kBFloat16);
    {
      AutocastGuard off(kBFloat16, /*enabled=*/false);
      EXPECT_FALSE(is_autocast_enabled());
    }
    EXPECT_TRUE(is_autocast_enabled());
    EXPECT_TRUE(autocast_applies(kFloat32, kCPU, 1.0));
    EXPECT_FALSE(autocast_applies(kFloat64, kCPU, 1e9));
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_SG_ERROR(AutocastGuard(kFloat32),
                  "AutocastGuard: scratchgrad's autocast runs products "
                  "in bfloat16 only, got float32");
}

// On the reference kernels the bfloat16 product IS the float32 product of the rounded operands:
// the same bits.
TEST_F(AutocastTest, ReferenceProductIsTheFloat32ProductOfRoundedOperands) {
  CpuKernelsGuard reference(CpuKernels::Reference);
  manual_seed(1);
  const Tensor a = randn({2, 5, 19}), b = randn({19, 7});
  Tensor y;
  {
    AutocastGuard autocast(kBFloat16);
    y = matmul(a, b);
  }
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_TRUE(testing::tensors_near(y, matmul(bfloat16_rounded(a), bfloat16_rounded(b)), 0, 0));
  // And it is not the float32 product: rounding the operands changed it.
  EXPECT_FALSE(testing::tensors_near(y, matmul(a, b), 1e-5, 1e-5));
}

void check_products_under_autocast() {
  manual_seed(2);
  const Tensor a = randn({3, 4, 37}), b = randn({3, 37, 6}), w = randn({9, 37}), bias = randn({9});
  AutocastGuard autocast(kBFloat16);
  const Tensor ra = bfloat16_rounded(a), rb = bfloat16_rounded(b), rw = bfloat16_rounded(w);
  EXPECT_TRUE(within_float32_summation(matmul(a, b), ra, rb));
  EXPECT_TRUE(within_float32_summation(matmul(a, b.transpose(1, 2).contiguous().transpose(1, 2)),
                                       ra, rb));  // b as a transposed view
  EXPECT_TRUE(within_float32_summation(matmul(a.select(0, 1), w.t()), ra.select(0, 1), rw.t()));
  // fused_linear: the product summed onto the float32 bias, which is not rounded.
  const Tensor expanded_bias = bias.expand({3, 4, 9});
  EXPECT_TRUE(within_float32_summation(fused_linear(a, w, bias), ra, rw.t(), expanded_bias));
  EXPECT_TRUE(within_float32_summation(linear_composed(a, w, bias), ra, rw.t(), expanded_bias));
  // float64 is never rounded.
  const Tensor a64 = a.to(kFloat64), b64 = b.to(kFloat64);
  AutocastGuard off(kBFloat16, false);
  const Tensor exact = matmul(a64, b64);
  AutocastGuard on(kBFloat16);
  EXPECT_TRUE(testing::tensors_near(matmul(a64, b64), exact, 0, 0));
}

TEST_F(AutocastTest, ProductsReadRoundedOperandsOnTheReferenceKernels) {
  CpuKernelsGuard reference(CpuKernels::Reference);
  check_products_under_autocast();
}

TEST_F(AutocastTest, ProductsReadRoundedOperandsOnTheFastKernels) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  testing::at_every_cpu_feature_level(check_products_under_autocast);
}

// Backward runs outside the guard, as in a training loop, and still takes the recorded products
// in bfloat16: dA = G·Bᵀ and dB = Aᵀ·G from the rounded G, A and B.
void check_backward_remembers_autocast() {
  manual_seed(3);
  Tensor a = randn({6, 21}).requires_grad_(true), b = randn({21, 5}).requires_grad_(true);
  const Tensor g = randn({6, 5});
  Tensor y;
  {
    AutocastGuard autocast(kBFloat16);
    y = matmul(a, b);
  }
  y.backward(g);
  const Tensor ra = bfloat16_rounded(a.detach()), rb = bfloat16_rounded(b.detach());
  const Tensor rg = bfloat16_rounded(g);
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_TRUE(within_float32_summation(a.grad(), rg, rb.t()));
  EXPECT_TRUE(within_float32_summation(b.grad(), ra.t(), rg));
  // A product recorded outside autocast keeps float32 in a backward run inside it.
  Tensor c = randn({6, 21}).requires_grad_(true);
  Tensor z = matmul(c, b.detach());
  AutocastGuard autocast(kBFloat16);
  z.backward(g);
  EXPECT_TRUE(testing::tensors_near(
      c.grad(), testing::reference_matmul(g, b.detach().t()).to(kFloat32), 1e-4, 1e-4));
  EXPECT_FALSE(within_float32_summation(c.grad(), rg, rb.t()));
}

TEST_F(AutocastTest, BackwardRemembersTheForwardsAutocast) {
  for (const CpuKernels kernels : {CpuKernels::Reference, CpuKernels::Fast}) {
    CpuKernelsGuard guard(kernels);
    check_backward_remembers_autocast();
  }
}

TEST_F(AutocastTest, LinearAndItsGradientsUnderAutocast) {
  manual_seed(4);
  Tensor x = randn({4, 3, 40}).requires_grad_(true), w = randn({11, 40}).requires_grad_(true),
         bias = randn({11}).requires_grad_(true);
  const Tensor g = randn({4, 3, 11});
  {
    AutocastGuard autocast(kBFloat16);
    fused_linear(x, w, bias).backward(g);
  }
  const Tensor rx = bfloat16_rounded(x.detach()).view({12, 40}), rw = bfloat16_rounded(w.detach());
  const Tensor rg = bfloat16_rounded(g).view({12, 11});
  EXPECT_TRUE(within_float32_summation(x.grad().view({12, 40}), rg, rw));
  EXPECT_TRUE(within_float32_summation(w.grad(), rg.t(), rx));
  // db is a float32 sum of the unrounded gradient.
  EXPECT_TRUE(testing::tensors_near(bias.grad(), g.sum({0, 1}), 1e-5, 1e-5));
}

TEST_F(AutocastTest, OnlyProductsChange) {
  manual_seed(5);
  const Tensor x = randn({3, 8}), mask = randn({3, 8}) > 0.0;
  Tensor softmax_plain = softmax(x, -1), layer_norm_plain = fused_layer_norm(x, {8});
  Tensor loss_plain = cross_entropy(x, zeros({3}, kInt64)), sum_plain = x.sum(1);
  AutocastGuard autocast(kBFloat16);
  EXPECT_TRUE(testing::tensors_near(softmax(x, -1), softmax_plain, 0, 0));
  EXPECT_TRUE(testing::tensors_near(fused_layer_norm(x, {8}), layer_norm_plain, 0, 0));
  EXPECT_TRUE(testing::tensors_near(cross_entropy(x, zeros({3}, kInt64)), loss_plain, 0, 0));
  EXPECT_TRUE(testing::tensors_near(x.sum(1), sum_plain, 0, 0));
  EXPECT_EQ((x * 2.0).dtype(), kFloat32);
}

// fused_attention under autocast, through each of the fast backend's kernels (registers for up to
// 16 keys, one or a few queries, keys by columns as a decoding cache keeps them; narrow products
// for up to 64) and, at the AVX2 level or on the reference kernels, the composed form: the
// weights are the softmax of the exact scores of the rounded q and k, the output the rounded
// weights times the rounded v to float32 rounding of the sum, and the gradients those of the
// composed form under autocast. (A scale of 1/4 commutes with rounding, so the kernels' scale·kᵀ
// and the composed (scale·q)·kᵀ round the same operands.)
void check_attention_under_autocast(int64_t T, int64_t S, int64_t Dh, bool keys_by_columns) {
  SCOPED_TRACE(fmt::format("T {} S {} Dh {} keys by columns {}", T, S, Dh, keys_by_columns));
  Generator gen(static_cast<uint64_t>(T * 1000 + S * 10 + Dh));
  const double scale = 0.25;
  Tensor q = randn({2, 3, T, Dh}, gen).requires_grad_(true);
  Tensor k = (keys_by_columns ? randn({2, 3, Dh, S}, gen).transpose(2, 3).contiguous()
                              : randn({2, 3, S, Dh}, gen))
                 .requires_grad_(true);
  Tensor v = randn({2, 3, S, Dh}, gen).requires_grad_(true);
  const Tensor key_view = keys_by_columns ? k.transpose(2, 3).contiguous().transpose(2, 3) : k;
  const Tensor g = randn({2, 3, T, Dh}, gen);
  Tensor out, weights;
  {
    AutocastGuard autocast(kBFloat16);
    std::tie(out, weights) = fused_attention(q, keys_by_columns ? key_view : k, v, Tensor(), scale);
  }
  out.backward(g);
  const Tensor rq = bfloat16_rounded(q.detach()), rk = bfloat16_rounded(k.detach());
  const Tensor scores = testing::reference_matmul(rq.to(kFloat64), rk.to(kFloat64).transpose(2, 3));
  EXPECT_TRUE(testing::tensors_near(weights.to(kFloat64), softmax(scores * scale, -1), 2e-6, 1e-5));
  EXPECT_TRUE(within_float32_summation(out, bfloat16_rounded(weights.detach()),
                                       bfloat16_rounded(v.detach())));
  EXPECT_TRUE(within_float32_summation(v.grad(), bfloat16_rounded(weights.detach()).transpose(2, 3),
                                       bfloat16_rounded(g)));
  // dq and dk go through dS, rounded from a softmax gradient both compute in float32: the same
  // to within a rounding of some of its entries.
  Tensor cq = q.detach().requires_grad_(true), ck = k.detach().requires_grad_(true);
  {
    AutocastGuard autocast(kBFloat16);
    attention_composed(cq, ck, v.detach(), Tensor(), scale).first.backward(g);
  }
  auto relative = [](const Tensor& a, const Tensor& b) {
    return ((a - b).pow(2.0).sum() / b.pow(2.0).sum()).sqrt().item<double>();
  };
  EXPECT_LT(relative(q.grad(), cq.grad()), 5e-3);
  EXPECT_LT(relative(k.grad(), ck.grad()), 5e-3);
}

TEST_F(AutocastTest, FusedAttentionRoundsEveryProductsOperands) {
  for (const CpuKernels kernels : {CpuKernels::Reference, CpuKernels::Fast}) {
    CpuKernelsGuard guard(kernels);
    testing::at_every_cpu_feature_level([] {
      check_attention_under_autocast(5, 6, 8, false);     // registers, queries in the lanes
      check_attention_under_autocast(1, 7, 8, true);      // one query (decoding), keys by columns
      check_attention_under_autocast(3, 9, 16, false);    // a few queries
      check_attention_under_autocast(20, 40, 32, false);  // narrow products, up to 64 keys
    });
  }
}

TEST_F(AutocastTest, MatchesPyTorchAutocastOnCpu) {
  for (const char* name : {"matmul_autocast", "matmul_autocast_batched"}) {
    SCOPED_TRACE(name);
    const auto& c = testing::golden("bfloat16", name);
    AutocastGuard autocast(kBFloat16);
    const Tensor y = matmul(c.input("a"), c.input("b"));
    // The exact product of the operands as PyTorch rounded them, to float32 rounding of the sum.
    const Tensor ra = bfloat16_rounded(c.input("a")), rb = bfloat16_rounded(c.input("b"));
    EXPECT_TRUE(testing::tensors_near(testing::reference_matmul(ra, rb), c.output("exact"), 1e-12));
    EXPECT_TRUE(within_float32_summation(y, ra, rb));
    // PyTorch's own bfloat16 result: its kernels also round partial sums, a few bfloat16 steps.
    EXPECT_TRUE(testing::tensors_near(y, c.output("out"), 0.15, 0.02));
  }
  const auto& c = testing::golden("bfloat16", "linear_autocast");
  Tensor x = c.input("x").requires_grad_(true), w = c.input("w").requires_grad_(true),
         bias = c.input("bias").requires_grad_(true);
  {
    AutocastGuard autocast(kBFloat16);
    Tensor out = fused_linear(x, w, bias);
    EXPECT_TRUE(testing::tensors_near(out, c.output("exact_out"), 1e-4, 1e-5));
    EXPECT_TRUE(testing::tensors_near(out, c.output("out"), 0.1, 0.02));
    out.backward(c.input("grad_out"));
  }
  for (const auto& [ours, name] : {std::pair{x.grad(), "grad_x"}, std::pair{w.grad(), "grad_w"},
                                   std::pair{bias.grad(), "grad_bias"}}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(testing::tensors_near(ours, c.output(std::string("exact_") + name), 1e-4, 1e-5));
    EXPECT_TRUE(testing::tensors_near(ours, c.output(name), 0.1, 0.02));
  }
}

TEST_F(AutocastTest, Float64GradchecksHoldInsideAutocast) {
  AutocastGuard autocast(kBFloat16);
  const Tensor a = testing::random_leaf({3, 4}, 1), b = testing::random_leaf({4, 2}, 2);
  const Tensor w = testing::random_leaf({5, 4}, 3), bias = testing::random_leaf({5}, 4);
  EXPECT_GRADCHECK([](const auto& in) { return matmul(in[0], in[1]); }, {a, b});
  EXPECT_GRADCHECK([](const auto& in) { return fused_linear(in[0], in[1], in[2]); }, {a, w, bias});
}

// The CPU's threshold: a product below it stays float32 (the same bits as outside autocast), one
// at it reads rounded operands; a batch is judged by each product; the backward follows the
// forward's choice whatever its own products' sizes; and the guard puts the threshold back.
void check_threshold(CpuKernels kernels) {
  const CpuKernelsGuard guard(kernels);
  manual_seed(6);
  // [64, 128]·[128, 1024] is exactly 2^23 multiply-adds; one row fewer is below.
  const Tensor a = randn({64, 128}), b = randn({128, 1024});
  const Tensor small_a = a.narrow(0, 0, 63);
  Tensor large, small, batched;
  {
    AutocastGuard autocast(kBFloat16);
    EXPECT_EQ(autocast_cpu_min_product(), kAutocastCpuMinProduct);
    EXPECT_TRUE(autocast_applies(kFloat32, kCPU, double(kAutocastCpuMinProduct)));
    EXPECT_FALSE(autocast_applies(kFloat32, kCPU, double(kAutocastCpuMinProduct) - 1));
    EXPECT_TRUE(autocast_applies(kFloat32, Device::cuda(0), 1.0));  // no GPU threshold
    large = matmul(a, b);
    small = matmul(small_a, b);
    batched = matmul(stack({small_a, small_a}), b);  // twice the work, each product below
  }
  EXPECT_TRUE(within_float32_summation(large, bfloat16_rounded(a), bfloat16_rounded(b)));
  EXPECT_TRUE(testing::tensors_near(small, matmul(small_a, b), 0, 0));
  // Against the same batched product outside autocast: a batch is one BLAS call over its stacked
  // rows, whose kernels (Haswell's among them) may sum a row differently from a lone product.
  EXPECT_TRUE(testing::tensors_near(batched, matmul(stack({small_a, small_a}), b), 0, 0));
  // A small Linear layer, forward and backward, is float32's to the bit.
  Tensor x = randn({10, 32}).requires_grad_(true), w = randn({32, 32}).requires_grad_(true);
  const Tensor bias = randn({32}), g = randn({10, 32});
  Tensor y;
  {
    AutocastGuard autocast(kBFloat16);
    y = fused_linear(x, w, bias);
  }
  y.backward(g);
  const Tensor dx = x.grad(), dw = w.grad();
  x.set_grad(Tensor());
  w.set_grad(Tensor());
  const Tensor y32 = fused_linear(x, w, bias);
  y32.backward(g);
  EXPECT_TRUE(testing::tensors_near(y, y32, 0, 0));
  EXPECT_TRUE(testing::tensors_near(dx, x.grad(), 0, 0));
  EXPECT_TRUE(testing::tensors_near(dw, w.grad(), 0, 0));
}

TEST(AutocastThreshold, SmallCpuProductsStayFloat32) {
  check_threshold(CpuKernels::Reference);
  check_threshold(CpuKernels::Fast);
}

// Attention's two products per head, Q·Kᵀ (T·S·Dh) and P·V (T·S·Dv): where the threshold falls
// between them, fused_attention gives what the composed form gives (Q·Kᵀ rounded, P·V not), as
// the reference kernels do.
TEST(AutocastThreshold, AttentionWithTheThresholdBetweenItsProducts) {
  const CpuKernelsGuard fast(CpuKernels::Fast);
  manual_seed(8);
  // 512 x 512 x 32 = 2^23 multiply-adds for Q·Kᵀ, half that for P·V.
  const Tensor q = randn({1, 1, 512, 32}), k = randn({1, 1, 512, 32}), v = randn({1, 1, 512, 16});
  AutocastGuard autocast(kBFloat16);
  const auto [out, weights] = fused_attention(q, k, v, Tensor(), 0.125);
  const auto [composed_out, composed_weights] = attention_composed(q, k, v, Tensor(), 0.125);
  EXPECT_TRUE(testing::tensors_near(out, composed_out, 0, 0));
  EXPECT_TRUE(testing::tensors_near(weights, composed_weights, 0, 0));
  // And the composed form did round Q·Kᵀ: its weights are not float32's.
  AutocastGuard off(kBFloat16, false);
  EXPECT_FALSE(testing::tensors_near(weights, attention_composed(q, k, v, Tensor(), 0.125).second,
                                     1e-7, 1e-7));
}

TEST(AutocastThreshold, TheBackwardFollowsTheForwardsChoice) {
  manual_seed(7);
  // A small product run in bfloat16 (a threshold of 0 in the forward), its backward outside the
  // guard, under the default threshold: dA = G·Bᵀ and dB = Aᵀ·G still read rounded operands.
  Tensor a = randn({3, 5}).requires_grad_(true), b = randn({5, 4}).requires_grad_(true);
  const Tensor g = randn({3, 4});
  Tensor y;
  {
    AutocastGuard autocast(kBFloat16);
    AutocastCpuMinProductGuard every_product(0);
    EXPECT_EQ(autocast_cpu_min_product(), 0);
    y = matmul(a, b);
  }
  EXPECT_EQ(autocast_cpu_min_product(), kAutocastCpuMinProduct);
  y.backward(g);
  const Tensor rg = bfloat16_rounded(g);
  EXPECT_TRUE(within_float32_summation(a.grad(), rg, bfloat16_rounded(b.detach()).t()));
  EXPECT_TRUE(within_float32_summation(b.grad(), bfloat16_rounded(a.detach()).t(), rg));
  EXPECT_FALSE(testing::tensors_near(a.grad(), matmul(g, b.detach().t()), 1e-6, 1e-6));
  EXPECT_SG_ERROR(AutocastCpuMinProductGuard(-1),
                  "AutocastCpuMinProductGuard: the threshold counts multiply-adds, got -1");
}

}  // namespace
}  // namespace sg
