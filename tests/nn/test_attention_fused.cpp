// Tests for fused_attention and the CPU's kernels: short sequences in registers
// (backend/cpu_fast/short_attention.cpp) and up to 64 keys through narrow_gemm
// (backend/cpu_fast/gemm_attention.cpp). Output, weights and the gradients of q, k and v (through
// the output and through the weights) against the composed attention in float64
// (nn::scaled_dot_product_attention, which composes the ops for float64), with no mask, padding
// and causal masks, a query with every key masked, queries and keys of different lengths, head
// views split from [B, T, H·Dh] rows, keys by columns (a decoding cache's layout,
// nn/kv_buffer.h), and the sizes at the kernels' limits; and the cases they leave to the
// composition.
#include <utility>

#include "autograd/backend/backend.h"
#include "autograd/ops.h"
#include "nn/attention.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

struct Case {
  int64_t B, H, T, S, Dh, Dv;
  Tensor mask;               // bool, broadcastable to [B, H, T, S], or undefined
  bool split_heads = false;  // q, k, v as views [B, L, H, D] -> [B, H, L, D]
  // k as a KVBuffer keeps keys: [B, H, Dh, capacity] narrowed to S and read as [B, H, S, Dh]
  bool keys_by_columns = false;
};

Tensor heads(const Case& c, int64_t L, int64_t D) {
  if (!c.split_heads) return randn({c.B, c.H, L, D});
  return randn({c.B, L, c.H, D}).transpose(1, 2);
}

void check_against_composition(const Case& c) {
  SCOPED_TRACE(fmt::format("B {} H {} T {} S {} Dh {} Dv {} mask {} split {}", c.B, c.H, c.T, c.S,
                           c.Dh, c.Dv, c.mask.defined() ? c.mask.shape() : Shape{}, c.split_heads));
  const Tensor q = heads(c, c.T, c.Dh), v = heads(c, c.S, c.Dv);
  const Tensor k = c.keys_by_columns
                       ? randn({c.B, c.H, c.Dh, c.S + 3}).narrow(3, 0, c.S).transpose(2, 3)
                       : heads(c, c.S, c.Dh);
  const Tensor g_out = randn({c.B, c.H, c.T, c.Dv}), g_weights = randn({c.B, c.H, c.T, c.S});
  const double scale = 0.37;

  // Leaves with q's, k's and v's strides (clone() keeps a view's layout only where it is dense).
  auto leaf = [](const Tensor& t) {
    Tensor copy = t.detach();
    copy.requires_grad_(true);
    return copy;
  };
  Tensor qf = leaf(q), kf = leaf(k), vf = leaf(v);
  auto [out, weights] = fused_attention(qf, kf, vf, c.mask, scale);
  ASSERT_TRUE(out.grad_fn() && out.grad_fn()->name() == "fused_attention")
      << "the kernel did not take these shapes";
  ((out * g_out).sum() + (weights * g_weights).sum()).backward();

  // The composition in float64, with its scale 1/√Dh turned into `scale` through q.
  Tensor qd = q.to(kFloat64).requires_grad_(true), kd = k.to(kFloat64).requires_grad_(true),
         vd = v.to(kFloat64).requires_grad_(true);
  const double fix = scale * std::sqrt(static_cast<double>(c.Dh));
  nn::AttentionOutput ref = nn::scaled_dot_product_attention(qd * fix, kd, vd, c.mask, 0.0, false);
  ((ref.output * g_out.to(kFloat64)).sum() + (ref.weights * g_weights.to(kFloat64)).sum())
      .backward();

  EXPECT_TRUE(testing::tensors_near(out.to(kFloat64), ref.output, 1e-5, 1e-4)) << "output";
  EXPECT_TRUE(testing::tensors_near(weights.to(kFloat64), ref.weights, 1e-6, 1e-4)) << "weights";
  EXPECT_TRUE(testing::tensors_near(qf.grad().to(kFloat64), qd.grad(), 1e-5, 1e-4)) << "dq";
  EXPECT_TRUE(testing::tensors_near(kf.grad().to(kFloat64), kd.grad(), 1e-5, 1e-4)) << "dk";
  EXPECT_TRUE(testing::tensors_near(vf.grad().to(kFloat64), vd.grad(), 1e-5, 1e-4)) << "dv";
}

// Whether the fast backend's attention kernels take q, k, v (no mask, scale 1).
bool kernel_takes(const Tensor& q, const Tensor& k, const Tensor& v) {
  Tensor out = empty({q.size(0), q.size(1), q.size(2), v.size(3)}, q.options());
  Tensor weights = empty({q.size(0), q.size(1), q.size(2), k.size(2)}, q.options());
  return cpu_backend(CpuKernels::Fast).attention(q, k, v, Tensor(), 1.0, out, weights, false);
}

#define SG_SKIP_WITHOUT_SHORT_ATTENTION()                                           \
  if (!kernel_takes(randn({1, 1, 2, 2}), randn({1, 1, 2, 2}), randn({1, 1, 2, 2}))) \
  GTEST_SKIP() << "no fused attention kernel here (the CPU's needs AVX-512); "      \
                  "scaled_dot_product_attention composes the ops"

TEST(AttentionFused, MatchesTheCompositionWithoutAMask) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_SHORT_ATTENTION();
  manual_seed(1);
  check_against_composition({2, 3, 10, 10, 8, 8, Tensor()});
  check_against_composition({1, 2, 16, 16, 16, 16, Tensor()});  // every limit at once
  check_against_composition({3, 1, 1, 1, 1, 1, Tensor()});
}

// sum()'s gradient is one value expanded with stride 0: the kernels read a head's rows with the
// head dim contiguous, so the backward failed ("the backend ran the forward but not the
// backward") for out.sum().backward() on the fast kernels, short or up to 64 keys.
TEST(AttentionFused, AGradientThatIsNotContiguousIsTakenToo) {
  for (const int64_t S : {3, 40}) {
    SCOPED_TRACE(fmt::format("S {}", S));
    Tensor q = randn({1, 2, 3, 4}).requires_grad_(true);
    const Tensor k = randn({1, 2, S, 4}), v = randn({1, 2, S, 4});
    auto [out, weights] = fused_attention(q, k, v, Tensor(), 0.5);
    out.sum().backward();
    Tensor qd = q.detach().to(kFloat64).requires_grad_(true);
    nn::AttentionOutput ref = nn::scaled_dot_product_attention(
        qd * (0.5 * 2.0), k.to(kFloat64), v.to(kFloat64), Tensor(), 0.0, false);
    ref.output.sum().backward();
    EXPECT_TRUE(testing::tensors_near(q.grad().to(kFloat64), qd.grad(), 1e-5, 1e-4));
  }
}

TEST(AttentionFused, MatchesTheCompositionWithPaddingAndCausalMasks) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_SHORT_ATTENTION();
  manual_seed(2);
  // Padding: batch 0 keeps 7 of 11 keys, batch 1 all of them; [B, 1, 1, S].
  const Tensor keys = arange(11.0).view({1, 11});
  const Tensor lengths = tensor({7.0, 11.0}).view({2, 1});
  const Tensor padding = keys.lt(lengths).view({2, 1, 1, 11});
  check_against_composition({2, 4, 9, 11, 8, 5, padding});
  check_against_composition({2, 4, 9, 11, 8, 5, padding, /*split_heads=*/true});
  // Causal [1, 1, T, T], and both at once [B, 1, T, T].
  const Tensor causal = nn::make_causal_mask(12);
  check_against_composition({2, 4, 12, 12, 8, 8, causal, true});
  const Tensor both =
      logical_and(causal, arange(12.0).view({1, 12}).lt(lengths).view({2, 1, 1, 12}));
  check_against_composition({2, 4, 12, 12, 8, 8, both});
}

// T queries over 6 keys, query `blind` with every key masked: it gets zeros, weights and output.
void expect_a_blind_query_gets_zeros(int64_t T, int64_t blind) {
  Tensor mask = ones({1, 1, T, 6}, TensorOptions(kBool));
  mask.narrow(2, blind, 1).fill_(0.0);
  check_against_composition({2, 2, T, 6, 4, 4, mask});
  auto [out, weights] =
      fused_attention(randn({2, 2, T, 4}), randn({2, 2, 6, 4}), randn({2, 2, 6, 4}), mask, 0.5);
  EXPECT_TRUE(testing::tensors_equal(out.narrow(2, blind, 1), zeros({2, 2, 1, 4})));
  EXPECT_TRUE(testing::tensors_equal(weights.narrow(2, blind, 1), zeros({2, 2, 1, 6})));
}

TEST(AttentionFused, AQueryWithEveryKeyMaskedGetsZeros) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_SHORT_ATTENTION();
  manual_seed(3);
  expect_a_blind_query_gets_zeros(5, 3);
}

// Up to 4 queries take the forward with the keys in the lanes (decoding's one new position): the
// same answers, with every mask shape a decoder step uses.
TEST(AttentionFused, AFewQueriesMatchTheComposition) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_SHORT_ATTENTION();
  manual_seed(4);
  const Tensor lengths = tensor({7.0, 11.0}).view({2, 1});
  const Tensor padding = arange(11.0).view({1, 11}).lt(lengths).view({2, 1, 1, 11});
  for (int64_t T = 1; T <= 5; ++T) {  // 5: the first with the queries in the lanes again
    check_against_composition({2, 4, T, 11, 8, 8, Tensor()});
    check_against_composition({2, 4, T, 11, 8, 5, padding, /*split_heads=*/true});
    // A decoder step of T new positions after 16 - T: the causal mask's last T rows.
    const Tensor causal_rows = nn::make_causal_mask(16).narrow(2, 16 - T, T);
    check_against_composition({2, 3, T, 16, 7, 16, causal_rows});
  }
  check_against_composition({3, 2, 1, 1, 16, 1, Tensor()});  // one key: P = 1
  expect_a_blind_query_gets_zeros(3, 1);
}

// Keys by columns, as a decoding cache keeps them (nn/kv_buffer.h): the kernels read them in
// place (one query's scores are then vector loads, not gathers); the backward copies them into
// rows. The same answers, through both kernels.
TEST(AttentionFused, KeysByColumnsMatchTheComposition) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_SHORT_ATTENTION();
  manual_seed(6);
  const Tensor by_columns = randn({2, 4, 8, 16}).narrow(3, 0, 11).transpose(2, 3);
  EXPECT_TRUE(kernel_takes(randn({2, 4, 1, 8}), by_columns, randn({2, 4, 11, 8})));
  const Tensor lengths = tensor({7.0, 11.0}).view({2, 1});
  const Tensor padding = arange(11.0).view({1, 11}).lt(lengths).view({2, 1, 1, 11});
  for (int64_t T : {1, 2, 4, 5, 11}) {  // keys in the lanes up to 4 queries, queries past
    SCOPED_TRACE(T);
    check_against_composition({2, 4, T, 11, 8, 8, Tensor(), true, true});
    check_against_composition({2, 4, T, 11, 8, 5, padding, true, true});
    const Tensor causal_rows = nn::make_causal_mask(16).narrow(2, 16 - T, T);
    check_against_composition({2, 3, T, 16, 7, 16, causal_rows, false, true});
  }
  check_against_composition({3, 2, 1, 1, 16, 1, Tensor(), false, true});  // the first position
  // Past 16 keys or a head of 16: narrow_gemm's kernel.
  check_against_composition({2, 3, 1, 40, 20, 20, Tensor(), true, true});
  check_against_composition({2, 2, 64, 64, 32, 32, nn::make_causal_mask(64), true, true});
}

// The output comes in [B, T, H, Dv] order: merging the heads back is a view.
TEST(AttentionFused, MergingTheHeadsOfTheOutputIsAView) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_SHORT_ATTENTION();
  auto [out, weights] = fused_attention(randn({2, 4, 10, 8}), randn({2, 4, 10, 8}),
                                        randn({2, 4, 10, 8}), Tensor(), 0.35);
  EXPECT_TRUE(out.transpose(1, 2).is_contiguous());
  EXPECT_TRUE(weights.is_contiguous());
}

// Past 16, up to 64 keys and heads of up to 64 go through narrow_gemm, any number of queries:
// the medium model's 64 x 64 heads of 32 and the annotated model's 10 x 11 heads of 64.
TEST(AttentionFused, UpTo64KeysAndWideHeadsMatchTheComposition) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast kernels, whatever SCRATCHGRAD_KERNELS says
  SG_SKIP_WITHOUT_SHORT_ATTENTION();
  manual_seed(5);
  const Tensor lengths = tensor({50.0, 64.0}).view({2, 1});
  const Tensor padding = arange(64.0).view({1, 64}).lt(lengths).view({2, 1, 1, 64});
  const Tensor causal = nn::make_causal_mask(64);
  check_against_composition({2, 3, 64, 64, 32, 32, logical_and(causal, padding), true});
  check_against_composition({2, 3, 63, 64, 32, 32, padding, true});  // cross-attention
  check_against_composition({2, 2, 10, 11, 64, 64, Tensor(), true});
  check_against_composition({1, 2, 17, 17, 8, 8, Tensor()});
  check_against_composition({1, 2, 3, 40, 20, 5, causal.narrow(2, 37, 3).narrow(3, 0, 40)});
  check_against_composition({1, 1, 150, 33, 16, 64, Tensor()});  // dk, dv: depth 150
  check_against_composition({2, 2, 5, 6, 17, 1, Tensor()});      // one value column
  expect_a_blind_query_gets_zeros(20, 7);
}

TEST(AttentionFused, LongerSequencesFloat64AndMismatchesAreLeftToTheComposition) {
  CpuKernelsGuard fast(CpuKernels::Fast);  // the fast backend's kernels
  EXPECT_FALSE(kernel_takes(randn({1, 1, 65, 8}), randn({1, 1, 65, 8}), randn({1, 1, 65, 8})));
  EXPECT_FALSE(kernel_takes(randn({1, 1, 4, 65}), randn({1, 1, 4, 65}), randn({1, 1, 4, 8})));
  EXPECT_FALSE(kernel_takes(randn({1, 1, 4, 8}), randn({1, 1, 4, 8}), randn({1, 1, 4, 65})));
  const TensorOptions f64(kFloat64);
  EXPECT_FALSE(
      kernel_takes(randn({1, 1, 4, 8}, f64), randn({1, 1, 4, 8}, f64), randn({1, 1, 4, 8}, f64)));
  // Where the kernel does not take them, fused_attention is the composition: the same values.
  const Tensor q = randn({1, 2, 65, 8}), k = randn({1, 2, 65, 8}), v = randn({1, 2, 65, 8});
  auto [out, weights] = fused_attention(q, k, v, Tensor(), 0.5);
  auto [ref_out, ref_weights] = attention_composed(q, k, v, Tensor(), 0.5);
  EXPECT_TRUE(testing::tensors_near(out, ref_out, 0, 0)) << "65 keys";
  EXPECT_TRUE(testing::tensors_near(weights, ref_weights, 0, 0)) << "65 keys";
  // Mismatches: the composition reports them.
  EXPECT_THROW(
      fused_attention(randn({1, 1, 4, 8}), randn({1, 1, 5, 8}), randn({1, 1, 4, 8}), Tensor(), 1.0),
      Error);  // 5 keys, 4 values
  EXPECT_THROW(fused_attention(randn({1, 1, 4, 8}), randn({1, 1, 5, 8}), randn({1, 1, 5, 8}),
                               ones({1, 1, 4, 4}, TensorOptions(kBool)), 1.0),
               Error);  // a mask that does not broadcast
}

}  // namespace
}  // namespace sg
