// Tests for nn/loss.cpp and autograd/ops/cross_entropy.cpp: values and gradients against PyTorch,
// cross_entropy (one node on the fast CPU kernel in float32) against cross_entropy_composed,
// gradchecks, and errors.
#include "nn/loss.h"

#include <cmath>

#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::golden;
using sg::testing::random_leaf;
using sg::testing::tensors_near;

using LossFn = Tensor (*)(const Tensor&, const Tensor&, int64_t, double, std::string_view);

const char* const kCrossEntropyCases[] = {
    "ce_basic", "ce_ignore_default", "ce_ignore_pad0", "ce_smoothing", "ce_smoothing_ignore",
    "ce_3d",    "ce_large_logits",   "ce_float64"};

// Values for the three reductions and the gradients of "mean" and of Σ w ⊙ "none".
// The op as a plain function: ops take a trailing CallSite (autograd/call_site.h), so their own
// address has another type.
Tensor fused_cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                           double label_smoothing, std::string_view reduction) {
  return cross_entropy(logits, target, ignore_index, label_smoothing, reduction);
}
Tensor composed_cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index,
                              double label_smoothing, std::string_view reduction) {
  return cross_entropy_composed(logits, target, ignore_index, label_smoothing, reduction);
}

void expect_matches_pytorch(LossFn loss, const char* name) {
  const auto& c = golden("nn_loss", name);
  const auto ignore = c.param<int64_t>("ignore_index");
  const auto smoothing = c.param<double>("label_smoothing");
  const Tensor target = c.input("target");
  for (const char* reduction : {"mean", "sum", "none"}) {
    Tensor out = loss(c.input("logits"), target, ignore, smoothing, reduction);
    EXPECT_TRUE(tensors_near(out, c.output(reduction), 1e-5, 1e-5)) << name << " " << reduction;
  }
  Tensor x = c.input("logits").requires_grad_();
  loss(x, target, ignore, smoothing, "mean").backward();
  EXPECT_TRUE(tensors_near(x.grad(), c.output("grad_mean"), 1e-6, 1e-5)) << name;
  x.set_grad(Tensor());
  (loss(x, target, ignore, smoothing, "none") * c.input("weight")).sum().backward();
  EXPECT_TRUE(tensors_near(x.grad(), c.output("grad_none"), 1e-6, 1e-5)) << name;
}

TEST(CrossEntropyGolden, FusedMatchesPyTorch) {
  for (const char* name : kCrossEntropyCases) expect_matches_pytorch(&fused_cross_entropy, name);
}

TEST(CrossEntropyGolden, ComposedMatchesPyTorch) {
  for (const char* name : kCrossEntropyCases) expect_matches_pytorch(&composed_cross_entropy, name);
}

// Where the backend has a kernel (the fast CPU kernels, float32 rows) the loss is one node
// straight to the logits; elsewhere (the reference kernels, float64) it is the composed loss.
TEST(CrossEntropyFused, IsOneNodeWhereTheBackendHasAKernelAndComposedElsewhere) {
  const Tensor target = from_vector<int64_t>({0, 4, 2, 1});
  {
    CpuKernelsGuard fast(CpuKernels::Fast);
    Tensor x = randn({4, 5}).requires_grad_(true);
    Tensor loss = cross_entropy(x, target);
    ASSERT_NE(loss.grad_fn(), nullptr);
    EXPECT_EQ(loss.grad_fn()->name(), "cross_entropy");
    ASSERT_EQ(loss.grad_fn()->edges().size(), 2u);
    EXPECT_EQ(loss.grad_fn()->edges()[0].leaf, x.impl_ptr());  // no log_softmax node in between
    EXPECT_FALSE(loss.grad_fn()->edges()[1].needs_grad());     // the int64 target
    Tensor x64 = random_leaf({4, 5});
    EXPECT_EQ(cross_entropy(x64, target).grad_fn()->name(), "div");  // the mean of the composed
  }
  CpuKernelsGuard reference(CpuKernels::Reference);
  Tensor x = randn({4, 5}).requires_grad_(true);
  EXPECT_EQ(cross_entropy(x, target).grad_fn()->name(), "div");
}

TEST(CrossEntropyFused, MatchesComposedValuesAndGradients) {
  struct Setup {
    Shape shape;
    std::vector<int64_t> target;
    int64_t ignore;
    double smoothing;
  };
  const std::vector<Setup> setups = {
      {{6, 5}, {0, 4, 2, 2, 1, 3}, -100, 0.0},
      {{6, 5}, {0, 4, 2, 2, 1, 3}, 2, 0.0},
      {{6, 5}, {0, 4, 2, 2, 1, 3}, 2, 0.3},
      {{2, 3, 4}, {3, 0, 1, 0, 0, 2}, 0, 0.1},
      {{5}, {4}, -100, 0.5},  // unbatched: logits [C], a 0-d target
  };
  for (const Setup& s : setups) {
    Shape target_shape(s.shape.begin(), s.shape.end() - 1);
    Tensor target = from_vector(s.target, target_shape);
    for (const char* reduction : {"mean", "sum", "none"}) {
      Tensor a = random_leaf(s.shape, 3), b = random_leaf(s.shape, 3);
      Tensor weight = random_leaf(target_shape, 4).detach();
      Tensor fused = cross_entropy(a, target, s.ignore, s.smoothing, reduction);
      Tensor composed = cross_entropy_composed(b, target, s.ignore, s.smoothing, reduction);
      EXPECT_TRUE(tensors_near(fused, composed, 1e-12, 1e-12)) << s.shape[0] << reduction;
      (fused * weight).sum().backward();
      (composed * weight).sum().backward();
      EXPECT_TRUE(tensors_near(a.grad(), b.grad(), 1e-12, 1e-12)) << s.shape[0] << reduction;
    }
  }
}

// float32 takes the CPU's kernel (backend/cpu_fast/cross_entropy.cpp), float64 the composition of
// ops/cross_entropy.cpp: the two agree, values and gradients, for every reduction, with padding
// and label smoothing, rows short and long, a [B, T, V] input and a transposed view.
TEST(CrossEntropyFused, Float32MatchesTheFloat64Composition) {
  manual_seed(7);
  struct Setup {
    Shape shape;
    int64_t ignore;
    double smoothing;
    bool transposed = false;
  };
  const std::vector<Setup> setups = {
      {{720, 11}, 0, 0.0},
      {{720, 11}, 0, 0.1},
      {{64, 1000}, -100, 0.2},
      {{4, 9, 11}, 1, 0.0},
      {{7, 5}, 2, 0.3, /*transposed=*/true},
      {{3, 1}, -100, 0.0},
  };
  for (const Setup& s : setups) {
    const Shape batch(s.shape.begin(), s.shape.end() - 1);
    const int64_t C = s.shape.back();
    Tensor target = randint(0, C, batch);
    if (s.ignore >= 0 && s.ignore < C) {
      target = where(rand(batch).lt(0.25), full({}, static_cast<double>(s.ignore), kInt64), target);
    }
    Tensor base = s.transposed ? randn({s.shape[1], s.shape[0]}).t() : randn(s.shape) * 3.0;
    for (const char* reduction : {"mean", "sum", "none"}) {
      SCOPED_TRACE(
          fmt::format("{} ignore {} smoothing {} {}", s.shape, s.ignore, s.smoothing, reduction));
      Tensor f = base.detach().requires_grad_(true);
      Tensor d = base.detach().to(kFloat64).requires_grad_(true);
      Tensor weight = randn(batch);
      Tensor loss_f = cross_entropy(f, target, s.ignore, s.smoothing, reduction);
      Tensor loss_d = cross_entropy(d, target, s.ignore, s.smoothing, reduction);
      EXPECT_EQ(loss_f.dtype(), kFloat32);
      EXPECT_TRUE(tensors_near(loss_f.to(kFloat64), loss_d, 1e-5, 1e-5));
      Tensor w = std::string_view(reduction) == "none" ? weight : full({}, 0.7);
      (loss_f * w).sum().backward();
      (loss_d * w.to(kFloat64)).sum().backward();
      EXPECT_TRUE(tensors_near(f.grad().to(kFloat64), d.grad(), 1e-6, 1e-5));
    }
  }
  // Every row ignored, in float32 too: mean NaN, gradient 0.
  Tensor x = randn({3, 4}).requires_grad_(true);
  Tensor mean = cross_entropy(x, full({3}, -100.0, kInt64));
  EXPECT_TRUE(std::isnan(mean.item<double>()));
  mean.backward();
  EXPECT_TRUE(tensors_near(x.grad(), zeros({3, 4}), 0, 0));
}

TEST(CrossEntropyGrad, Gradcheck) {
  Tensor x = random_leaf({5, 4});
  Tensor target = from_vector<int64_t>({3, 0, -100, 1, 3});
  for (const char* reduction : {"mean", "sum", "none"}) {
    for (double smoothing : {0.0, 0.2}) {
      EXPECT_GRADCHECK(
          [&](const auto& in) { return cross_entropy(in[0], target, -100, smoothing, reduction); },
          {x});
    }
  }
  // ignore_index as a real class (padding id 3), a [B, T, V] input, and a transposed view.
  Tensor padded = from_vector<int64_t>({3, 0, 3, 1, 2});
  EXPECT_GRADCHECK([&](const auto& in) { return cross_entropy(in[0], padded, 3, 0.1); }, {x});
  Tensor x3 = random_leaf({2, 3, 4}, 1);
  Tensor t3 = from_vector<int64_t>({0, 3, 1, 2, 0, 0}, {2, 3});
  EXPECT_GRADCHECK([&](const auto& in) { return cross_entropy(in[0], t3, 0, 0.1); }, {x3});
  Tensor xt = random_leaf({4, 5}, 2);
  EXPECT_GRADCHECK([&](const auto& in) { return cross_entropy(in[0].t(), padded, 3); }, {xt});
}

TEST(CrossEntropyGrad, ComposedGradcheck) {
  Tensor x = random_leaf({5, 4});
  Tensor target = from_vector<int64_t>({3, 0, -100, 1, 3});
  for (const char* reduction : {"mean", "none"}) {
    EXPECT_GRADCHECK(
        [&](const auto& in) { return cross_entropy_composed(in[0], target, -100, 0.3, reduction); },
        {x});
  }
}

TEST(CrossEntropyIgnore, MeanDividesByTheTargetsKept) {
  // Rows 1 and 3 are padding: the mean is over rows 0 and 2 only, not over all four.
  Tensor x = random_leaf({4, 3});
  Tensor target = from_vector<int64_t>({2, 0, 1, 0});
  Tensor per_row = cross_entropy(x, target, 0, 0.0, "none");
  EXPECT_EQ(per_row.at<double>({1}), 0.0);
  EXPECT_EQ(per_row.at<double>({3}), 0.0);
  const double expected = (per_row.at<double>({0}) + per_row.at<double>({2})) / 2;
  EXPECT_NEAR(cross_entropy(x, target, 0).item<double>(), expected, 1e-12);
  cross_entropy(x, target, 0).backward();
  EXPECT_TRUE(tensors_near(x.grad().select(0, 1), zeros({3}, kFloat64), 0, 0));
}

TEST(CrossEntropyIgnore, AllIgnoredIsNanWithZeroGradientLikePyTorch) {
  Tensor x = random_leaf({3, 4});
  Tensor target = full({3}, -100.0, kInt64);
  for (LossFn loss : {LossFn(&fused_cross_entropy), LossFn(&composed_cross_entropy)}) {
    x.set_grad(Tensor());
    Tensor mean = loss(x, target, -100, 0.1, "mean");
    EXPECT_TRUE(std::isnan(mean.item<double>()));
    EXPECT_EQ(loss(x, target, -100, 0.1, "sum").item<double>(), 0.0);
    mean.backward();
    EXPECT_TRUE(tensors_near(x.grad(), zeros({3, 4}, kFloat64), 0, 0));
  }
}

TEST(CrossEntropyForward, StableForHugeLogitsAndUniformForEqualOnes) {
  // log(softmax(x)) would give log(0) = -inf for the 0th row's target; log_softmax gives 2000.
  Tensor x = tensor({{1000.0, -1000.0}, {3.0, 3.0}});
  Tensor loss = cross_entropy(x, from_vector<int64_t>({1, 0}), -100, 0.0, "none");
  EXPECT_NEAR(loss.at<float>({0}), 2000.0, 1e-2);
  EXPECT_NEAR(loss.at<float>({1}), std::log(2.0), 1e-6);
}

TEST(CrossEntropyModule, HoldsItsOptions) {
  CrossEntropyLoss criterion(/*ignore_index=*/0, /*label_smoothing=*/0.1);
  EXPECT_EQ(criterion.str(),
            "CrossEntropyLoss(ignore_index=0, label_smoothing=0.1, "
            "reduction='mean')");
  Tensor x = random_leaf({3, 4});
  Tensor target = from_vector<int64_t>({0, 2, 3});
  EXPECT_TRUE(
      tensors_near(criterion(x, target), cross_entropy_composed(x, target, 0, 0.1), 1e-12, 1e-12));
  EXPECT_SG_ERROR(CrossEntropyLoss(-100, 0.0, "avg"), "CrossEntropyLoss: reduction must be");
}

TEST(CrossEntropyErrors, NameTheProblem) {
  Tensor x = zeros({3, 5});
  EXPECT_SG_ERROR(cross_entropy(x, from_vector<int64_t>({0, 7, 1})),
                  "cross_entropy: target 7 (at flat position 1) is out of range for 5 classes");
  EXPECT_SG_ERROR(cross_entropy(x, from_vector<int64_t>({0, 1, -1})),
                  "cross_entropy: target -1 (at flat position 2) is out of range for 5 classes");
  EXPECT_SG_ERROR(cross_entropy_composed(x, from_vector<int64_t>({5, 1, 1})),
                  "cross_entropy_composed: target 5 (at flat position 0) is out of range");
  EXPECT_SG_ERROR(cross_entropy(x, zeros({3})), "cross_entropy: target must be an int64 tensor");
  EXPECT_SG_ERROR(cross_entropy(zeros({3, 5}, kInt64), zeros({3}, kInt64)),
                  "cross_entropy: logits must be float32 or float64, got int64");
  EXPECT_SG_ERROR(cross_entropy(x, zeros({5}, kInt64)),
                  "cross_entropy: logits of shape [3, 5] need a target of shape [3]");
  EXPECT_SG_ERROR(cross_entropy(x, zeros({3}, kInt64), -100, 0.0, "avg"),
                  "cross_entropy: reduction must be \"mean\", \"sum\" or \"none\", got \"avg\"");
  EXPECT_SG_ERROR(cross_entropy(x, zeros({3}, kInt64), -100, 1.5),
                  "cross_entropy: label_smoothing must be in [0, 1], got 1.5");
  EXPECT_SG_ERROR(cross_entropy(scalar_tensor(1.0), zeros({}, kInt64)),
                  "cross_entropy: logits must have a class dim");
}

TEST(LossNll, MatchesPyTorch) {
  const auto& c = golden("nn_loss", "nll");
  Tensor lp = c.input("log_probs").requires_grad_();
  Tensor target = c.input("target");
  for (const char* reduction : {"mean", "sum", "none"}) {
    EXPECT_TRUE(tensors_near(nll_loss(lp, target, -100, reduction), c.output(reduction), 1e-6))
        << reduction;
  }
  nll_loss(lp, target).backward();
  EXPECT_TRUE(tensors_near(lp.grad(), c.output("grad_mean"), 1e-7));
}

TEST(LossNll, GradcheckAndErrors) {
  Tensor lp = random_leaf({4, 3});
  Tensor target = from_vector<int64_t>({2, 0, 1, 1});
  for (const char* reduction : {"mean", "sum", "none"}) {
    EXPECT_GRADCHECK([&](const auto& in) { return nll_loss(in[0], target, 1, reduction); }, {lp});
  }
  EXPECT_SG_ERROR(nll_loss(lp, from_vector<int64_t>({2, 0, 3, 1})),
                  "nll_loss: target 3 (at flat position 2) is out of range for 3 classes");
  EXPECT_SG_ERROR(nll_loss(lp, target, -100, "mea"), "nll_loss: reduction must be");
}

// One definition: cross_entropy is log_softmax and then nll_loss, on [B, T, C] with padding.
TEST(LossNll, IsCrossEntropyAfterLogSoftmax) {
  manual_seed(5);
  const Tensor logits = randn({2, 3, 5}, kFloat64);
  const Tensor target = from_vector<int64_t>({1, 4, 0, 2, 0, 3}, {2, 3});
  for (const char* reduction : {"mean", "sum", "none"}) {
    EXPECT_TRUE(tensors_near(nll_loss(log_softmax(logits, -1), target, 0, reduction),
                             cross_entropy(logits, target, 0, 0.0, reduction), 1e-12))
        << reduction;
  }
  EXPECT_SG_ERROR(nll_loss(logits, zeros({2, 4}, kInt64)),
                  "nll_loss: log_probs of shape [2, 3, 5] need a target of shape [2, 3]");
}

TEST(LossMse, MatchesPyTorchAndGradchecks) {
  const auto& c = golden("nn_loss", "mse");
  for (const char* reduction : {"mean", "sum", "none"}) {
    EXPECT_TRUE(
        tensors_near(mse_loss(c.input("a"), c.input("b"), reduction), c.output(reduction), 1e-6))
        << reduction;
  }
  Tensor a = random_leaf({3, 2}), b = random_leaf({3, 2}, 1);
  for (const char* reduction : {"mean", "sum", "none"}) {
    EXPECT_GRADCHECK([&](const auto& in) { return mse_loss(in[0], in[1], reduction); }, {a, b});
  }
  EXPECT_GRADCHECK([&](const auto& in) { return mse_loss(in[0].t(), in[1]); },
                   {random_leaf({2, 3}), b});
}

TEST(LossMse, RefusesShapesThatWouldBroadcast) {
  // A [N, 1] prediction against a [N] target would broadcast to [N, N]: an error, not N² pairs.
  EXPECT_SG_ERROR(mse_loss(zeros({4, 1}), zeros({4})),
                  "mse_loss: input and target must have the same shape, got [4, 1] and [4]");
  EXPECT_SG_ERROR(mse_loss(zeros({2}), zeros({2}), "max"), "mse_loss: reduction must be");
}

}  // namespace
}  // namespace sg::nn
