// Tests for nn/optim/: SGD, Adam and AdamW against three steps of torch.optim on the same
// parameters and gradients, the Optimizer base (skipping, zero_grad, lr), checkpoint state, and
// clip_grad_norm_ against torch.nn.utils.
#include <array>
#include <cmath>
#include <functional>
#include <memory>

#include "autograd/backend/adam_step_scalars.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/optim/adam.h"
#include "nn/optim/clip_grad.h"
#include "nn/optim/sgd.h"
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg::optim {
namespace {

using sg::testing::golden;
using sg::testing::GoldenCase;
using sg::testing::tensors_near;

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

// Steps an optimizer through the golden gradients and compares the parameters after every step,
// then its state tensors (exp_avg.0, momentum_buffer.1, ...) with torch's optimizer.state.
void expect_matches_torch(const char* name, size_t state_tensors, const MakeOptimizer& make) {
  const auto& c = golden("nn_optim", name);
  std::vector<Tensor> params = {c.input("p0").requires_grad_(), c.input("p1").requires_grad_()};
  std::unique_ptr<Optimizer> opt = make(params);
  for (int s = 1; s <= 3; ++s) {
    for (size_t i = 0; i < params.size(); ++i) {
      params[i].set_grad(c.input(fmt::format("grad{}_step{}", i, s)));
    }
    opt->step();
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(tensors_near(params[i], c.output(fmt::format("p{}_step{}", i, s)), 1e-6, 1e-5))
          << name << ": parameter " << i << " after step " << s;
    }
  }
  size_t compared = 0;
  for (const auto& [key, value] : opt->state()) {
    if (Optimizer::is_bookkeeping_entry(key)) continue;
    EXPECT_TRUE(tensors_near(value, c.output(key), 1e-6, 1e-5)) << name << ": " << key;
    ++compared;
  }
  EXPECT_EQ(compared, state_tensors) << name;
}

TEST(SgdGolden, MatchesTorchOptimForThreeSteps) {
  expect_matches_torch("sgd", 0, [](std::vector<Tensor> p) {
    return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1, .weight_decay = 0.01});
  });
  expect_matches_torch("sgd_momentum", 2, [](std::vector<Tensor> p) {
    return std::make_unique<SGD>(p, SGDOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.1});
  });
  expect_matches_torch("sgd_nesterov", 2, [](std::vector<Tensor> p) {
    return std::make_unique<SGD>(
        p, SGDOptions{.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true});
  });
}

TEST(AdamGolden, MatchesTorchOptimForThreeSteps) {
  expect_matches_torch("adam", 4, [](std::vector<Tensor> p) {
    return std::make_unique<Adam>(p, AdamOptions{.lr = 0.01});
  });
  expect_matches_torch("adam_l2", 4, [](std::vector<Tensor> p) {
    return std::make_unique<Adam>(
        p, AdamOptions{.lr = 0.02, .betas = {0.9, 0.98}, .eps = 1e-9, .weight_decay = 0.1});
  });
  expect_matches_torch("adam_amsgrad", 6, [](std::vector<Tensor> p) {
    return std::make_unique<Adam>(p, AdamOptions{.lr = 0.01, .betas = {0.5, 0.9}, .amsgrad = true});
  });
}

TEST(AdamGolden, AdamWMatchesTorchAndDiffersFromL2) {
  expect_matches_torch("adamw", 4, [](std::vector<Tensor> p) {
    return std::make_unique<AdamW>(p, AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
  });
  // The decoupled decay is not Adam's L2: one step from the same point must differ.
  Tensor a = ones({3}).requires_grad_(), b = ones({3}).requires_grad_();
  a.set_grad(full({3}, 0.5));
  b.set_grad(full({3}, 0.5));
  AdamW adamw({a}, {.lr = 0.1, .weight_decay = 0.5});
  Adam adam({b}, {.lr = 0.1, .weight_decay = 0.5});
  adamw.step();
  adam.step();
  // AdamW: 1 · (1 - 0.05) - 0.1 = 0.85. Adam's L2 folds the decay into g, whose sign alone
  // matters at step 1: 1 - 0.1 = 0.9.
  EXPECT_NEAR(a.at<float>({0}), 0.85f, 1e-6);
  EXPECT_NEAR(b.at<float>({0}), 0.9f, 1e-6);
  EXPECT_EQ(AdamWOptions{}.weight_decay, 1e-2);  // torch.optim.AdamW's default
}

// Adam runs the fused op adam_update_; its composed path (the same arithmetic as tensor ops) runs
// where the backend has no fused kernel, or here, where the parameter is not contiguous. Both
// round every scalar alike and compute in the same order; only the fused loop may contract a
// multiply and an add into one FMA (one rounding instead of two), so they agree to about an ulp.
TEST(AdamFusedUpdate, FusedKernelMatchesTheComposedOps) {
  for (const bool decoupled : {false, true}) {
    for (const double weight_decay : {0.0, 0.1}) {
      Tensor p = randn({6, 5}), g = randn({6, 5}), m = zeros({6, 5}), v = zeros({6, 5});
      // The same values laid out transposed: not contiguous, so the composed path runs.
      Tensor pt = p.t().contiguous().t(), mt = m.t().contiguous().t(), vt = v.t().contiguous().t();
      ASSERT_FALSE(pt.is_contiguous());
      NoGradGuard no_grad;
      for (int64_t step = 1; step <= 3; ++step) {
        const Tensor grad = g * static_cast<double>(step);
        adam_update_(p, grad, m, v, 0.01, 0.9, 0.98, 1e-9, weight_decay, decoupled, step);
        adam_update_(pt, grad, mt, vt, 0.01, 0.9, 0.98, 1e-9, weight_decay, decoupled, step);
      }
      EXPECT_TRUE(tensors_near(p, pt, 1e-7, 1e-6)) << decoupled << " " << weight_decay;
      EXPECT_TRUE(tensors_near(m, mt, 1e-7, 1e-6)) << decoupled << " " << weight_decay;
      EXPECT_TRUE(tensors_near(v, vt, 1e-7, 1e-6)) << decoupled << " " << weight_decay;
      EXPECT_FALSE(tensors_near(p, randn({6, 5}) * 0.0, 1e-3, 0));  // it did move
    }
  }
}

TEST(AdamFusedUpdate, ChecksItsArguments) {
  NoGradGuard no_grad;
  Tensor p = zeros({3}), m = zeros({3}), v = zeros({3});
  EXPECT_SG_ERROR(adam_update_(p, zeros({4}), m, v, 0.1, 0.9, 0.99, 1e-8, 0, false, 1),
                  "adam_update_: shapes [4] and [3] cannot be broadcast");
  EXPECT_SG_ERROR(
      adam_update_(p, zeros({3}), zeros({3}, kFloat64), v, 0.1, 0.9, 0.99, 1e-8, 0, false, 1),
      "adam_update_: gradient and moments must be float32 of shape [3], got float64");
  EXPECT_SG_ERROR(adam_update_(p, zeros({3}), m, v, 0.1, 0.9, 0.99, 1e-8, 0, false, 0),
                  "adam_update_: step counts from 1, got 0");
  Tensor leaf = zeros({3}).requires_grad_();
  set_grad_enabled(true);
  EXPECT_SG_ERROR(adam_update_(leaf, zeros({3}), m, v, 0.1, 0.9, 0.99, 1e-8, 0, false, 1),
                  "adam_update_: cannot change a tensor of shape [3] in place while it");
  set_grad_enabled(false);
}

// The multi-tensor step gives each parameter the bits adam_update_ gives it alone: parameters of
// many sizes (one of a single element, some spanning the pool's grains), each at its own step
// count, one whose state is not contiguous (updated alone), on both kernels and in float64.
TEST(AdamFusedUpdate, ForeachGivesEachParameterItsOwnUpdate) {
  NoGradGuard no_grad;
  for (const CpuKernels kernels : {CpuKernels::Fast, CpuKernels::Reference}) {
    for (const DType dtype : {kFloat32, kFloat64}) {
      for (const bool decoupled : {false, true}) {
        const CpuKernelsGuard guard(kernels);
        manual_seed(8);
        std::vector<AdamParameter> together;
        std::vector<std::array<Tensor, 4>> alone;
        int64_t step = 1;
        for (const Shape& shape : std::vector<Shape>{{1}, {3000}, {97, 130}, {5, 7}, {20000}}) {
          Tensor p = randn(shape).to(dtype), g = randn(shape).to(dtype);
          Tensor m = randn(shape).to(dtype).abs(), v = randn(shape).to(dtype).abs();
          together.push_back({p, g, m, v, step});
          alone.push_back({p.clone(), g, m.clone(), v.clone()});
          step += 2;
        }
        // Moments laid out transposed: not contiguous.
        Tensor pt = randn({4, 6}).to(dtype), gt = randn({4, 6}).to(dtype);
        Tensor mt = zeros({6, 4}, dtype).t(), vt = zeros({6, 4}, dtype).t();
        together.push_back({pt, gt, mt, vt, 1});
        alone.push_back({pt.clone(), gt, zeros({6, 4}, dtype).t(), zeros({6, 4}, dtype).t()});
        adam_update_foreach_(together, 0.01, 0.9, 0.98, 1e-9, 0.1, decoupled);
        for (size_t i = 0; i < alone.size(); ++i) {
          auto& [p, g, m, v] = alone[i];
          adam_update_(p, g, m, v, 0.01, 0.9, 0.98, 1e-9, 0.1, decoupled, together[i].step);
          const std::string where =
              fmt::format("parameter {} {} decoupled {}", i, dtype, decoupled);
          EXPECT_TRUE(tensors_near(together[i].param, p, 0, 0)) << where;
          EXPECT_TRUE(tensors_near(together[i].exp_avg, m, 0, 0)) << where;
          EXPECT_TRUE(tensors_near(together[i].exp_avg_sq, v, 0, 0)) << where;
        }
      }
    }
  }
}

TEST(AdamFusedUpdate, ForeachChecksEveryParameterBeforeChangingAny) {
  NoGradGuard no_grad;
  Tensor p = ones({3}), m = zeros({3}), v = zeros({3});
  const std::vector<AdamParameter> bad_step{{p, ones({3}), m, v, 1}, {p, ones({3}), m, v, 0}};
  EXPECT_SG_ERROR(adam_update_foreach_(bad_step, 0.1, 0.9, 0.99, 1e-8, 0, false),
                  "adam_update_foreach_: step counts from 1, got 0");
  EXPECT_TRUE(tensors_near(p, ones({3}), 0, 0));  // the first parameter was not updated
  const std::vector<AdamParameter> bad_shape{{p, ones({3}), m, v, 1},
                                             {p, ones({3}), m, zeros({4}), 1}};
  EXPECT_SG_ERROR(adam_update_foreach_(bad_shape, 0.1, 0.9, 0.99, 1e-8, 0, false),
                  "adam_update_foreach_: gradient and moments must be float32 of shape [3], got "
                  "float32 of shape [4]");
  EXPECT_TRUE(tensors_near(p, ones({3}), 0, 0));
  const Tensor scalars = from_vector(std::vector<double>{-0.1, 1.0, 1.0}, {3});
  const std::vector<AdamParameter> some_from_the_device{{p, ones({3}), m, v, 1},
                                                        {p, ones({3}), m, v, 0, scalars}};
  EXPECT_SG_ERROR(adam_update_foreach_(some_from_the_device, 0.1, 0.9, 0.99, 1e-8, 0, false),
                  "adam_update_foreach_: step_scalars must be given for every parameter or for "
                  "none");
  const std::vector<AdamParameter> bad_scalars{{p, ones({3}), m, v, 0, zeros({2}, kFloat64)}};
  EXPECT_SG_ERROR(adam_update_foreach_(bad_scalars, 0.1, 0.9, 0.99, 1e-8, 0, false),
                  "adam_update_foreach_: step_scalars must be a contiguous float64 tensor of "
                  "shape [3]");
  EXPECT_TRUE(tensors_near(p, ones({3}), 0, 0));
  adam_update_foreach_({}, 0.1, 0.9, 0.99, 1e-8, 0, false);  // nothing to do
}

// With the step's numbers in tensors (what a CUDA graph captures), the CPU reads them and gives
// the bits of the update from host numbers (the update composed of ops both ways: the fast
// kernel takes only host numbers).
TEST(AdamFusedUpdate, ForeachFromStepScalarsIsForeachFromHostNumbers) {
  NoGradGuard no_grad;
  const CpuKernelsGuard reference(CpuKernels::Reference);
  manual_seed(9);
  std::vector<AdamParameter> from_tensors, from_numbers;
  for (const Shape& shape : std::vector<Shape>{{4}, {30, 7}}) {
    const Tensor p = randn(shape), g = randn(shape), m = randn(shape), v = randn(shape).abs();
    const AdamStepScalars s = adam_step_scalars(0.01, 0.9, 0.98, 0.0, 2);
    from_tensors.push_back(
        {p, g, m.clone(), v.clone(), 0,
         from_vector(std::vector<double>{s.step_size, s.sqrt_bias_correction2, s.decay}, {3})});
    from_numbers.push_back({p.clone(), g, m.clone(), v.clone(), 2});
  }
  adam_update_foreach_(from_tensors, 99.0, 0.9, 0.98, 1e-8, 0.0, false);  // lr is not used
  adam_update_foreach_(from_numbers, 0.01, 0.9, 0.98, 1e-8, 0.0, false);
  for (size_t i = 0; i < from_tensors.size(); ++i) {
    EXPECT_TRUE(tensors_near(from_tensors[i].param, from_numbers[i].param, 0, 0)) << i;
    EXPECT_TRUE(tensors_near(from_tensors[i].exp_avg_sq, from_numbers[i].exp_avg_sq, 0, 0)) << i;
  }
}

TEST(OptimBase, SkipsParametersWithoutGradient) {
  Tensor used = ones({2}).requires_grad_(), unused = ones({2}).requires_grad_();
  Adam opt({used, unused}, {.lr = 0.1});
  used.set_grad(ones({2}));
  opt.step();
  opt.step();
  EXPECT_EQ(opt.step_count(), 2);
  EXPECT_TRUE(tensors_near(unused, ones({2}), 0, 0));
  EXPECT_LT(used.at<float>({0}), 1.0f);
  // Only the updated parameter has state, with its own step count (torch's state[p]["step"]).
  std::vector<std::string> names;
  for (const auto& [name, _] : opt.state()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"step", "lr", "params", "step.0", "exp_avg.0",
                                             "exp_avg_sq.0"}));
  // Its first update then uses bias correction for t = 1, not t = 3: a step of exactly lr.
  unused.set_grad(full({2}, 3.0));
  opt.step();
  EXPECT_NEAR(unused.at<float>({0}), 0.9f, 1e-6);
}

TEST(OptimBase, ZeroGradLrAndStepCount) {
  Tensor p = ones({2}).requires_grad_();
  SGD opt({p}, {.lr = 0.5});
  EXPECT_EQ(opt.lr(), 0.5);
  EXPECT_EQ(opt.step_count(), 0);
  (p * p).sum().backward();  // grad 2
  opt.step();
  EXPECT_TRUE(tensors_near(p, zeros({2}), 1e-7));  // 1 - 0.5 · 2
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
  opt.set_lr(0.25);
  EXPECT_EQ(opt.lr(), 0.25);
  EXPECT_EQ(opt.initial_lr(), 0.5);
  EXPECT_EQ(opt.step_count(), 1);
  EXPECT_SG_ERROR(opt.set_lr(-1.0), "SGD: learning rate must be non-negative, got -1");
}

TEST(OptimBase, FitsALineWithSgdAndAdam) {
  // y = 2x + 1 from 8 points: a working optimizer gets there; a sign error would diverge.
  Tensor x = arange(8, kFloat32).view({8, 1}) / 4.0;
  Tensor y = x * 2.0 + 1.0;
  for (int which = 0; which < 2; ++which) {
    manual_seed(0);
    nn::Linear fc(1, 1);
    std::unique_ptr<Optimizer> opt;
    if (which == 0) {
      opt = std::make_unique<SGD>(fc.parameters(), SGDOptions{.lr = 0.1, .momentum = 0.9});
    } else {
      opt = std::make_unique<Adam>(fc.parameters(), AdamOptions{.lr = 0.05});
    }
    for (int i = 0; i < 400; ++i) {
      opt->zero_grad();
      nn::mse_loss(fc(x), y).backward();
      opt->step();
    }
    EXPECT_NEAR(fc.weight.item<float>(), 2.0f, 1e-2) << opt->name();
    EXPECT_NEAR(fc.bias.item<float>(), 1.0f, 1e-2) << opt->name();
  }
}

TEST(OptimErrors, RejectBadParametersAndOptions) {
  Tensor p = ones({2}).requires_grad_();
  EXPECT_SG_ERROR(SGD({}, {}), "SGD: got an empty parameter list");
  EXPECT_SG_ERROR(Adam({p, p}), "Adam: parameter 1 is the same tensor as parameter 0");
  EXPECT_SG_ERROR(Adam({p * 2.0}), "Adam: parameter 0 (shape [2]) is not a leaf");
  EXPECT_SG_ERROR(SGD({ones({2}, kInt64)}), "SGD: parameter 0 must be float32 or float64");
  EXPECT_SG_ERROR(Adam({p}, {.betas = {0.9, 1.0}}), "Adam: betas must be in [0, 1), got (0.9, 1)");
  EXPECT_SG_ERROR(AdamW({p}, {.eps = -1}), "AdamW: eps must be non-negative");
  EXPECT_SG_ERROR(SGD({p}, {.nesterov = true}), "SGD: nesterov momentum needs momentum > 0");
  EXPECT_SG_ERROR(SGD({p}, {.lr = -0.1}), "SGD: learning rate must be non-negative");
  // An expanded leaf: Adam's fused update wrote each of its three values twice.
  Tensor expanded = randn({1, 3}).expand({2, 3}).requires_grad_();
  EXPECT_SG_ERROR(
      Adam({expanded}),
      "Adam: parameter 0 (shape [2, 3], strides [0, 1]) has elements that share memory");
}

// ---- checkpoint state ----

TEST(OptimState, RoundTripResumesExactly) {
  // Run A for 3 steps; run B for 2, save, load into a fresh C, and step B and C once more.
  auto grad_at = [](int s) { return full({3}, 0.1 * s) - arange(3, kFloat32) * 0.2; };
  Tensor pa = ones({3}).requires_grad_(), pc = ones({3}).requires_grad_();
  Adam a({pa}, {.lr = 0.1, .amsgrad = true});
  for (int s = 1; s <= 2; ++s) {
    pa.set_grad(grad_at(s));
    a.step();
  }
  {
    NoGradGuard no_grad;
    pc.copy_(pa);
  }
  Adam c({pc}, {.lr = 0.1, .amsgrad = true});
  c.load_state(a.state());
  EXPECT_EQ(c.step_count(), 2);
  pa.set_grad(grad_at(3));
  pc.set_grad(grad_at(3));
  a.step();
  c.step();
  EXPECT_TRUE(tensors_near(pc, pa, 0, 0));
}

TEST(OptimState, LoadStateNamesWhatIsWrong) {
  Tensor p = ones({2, 3}).requires_grad_();
  Adam opt({p});
  p.set_grad(ones({2, 3}));
  opt.step();
  NamedTensors good = opt.state();
  auto without = [&](const std::string& name) {
    NamedTensors s;
    for (const auto& e : good) {
      if (e.first != name) s.push_back(e);
    }
    return s;
  };
  EXPECT_SG_ERROR(opt.load_state(without("exp_avg_sq.0")),
                  "Adam.load_state: missing entry 'exp_avg_sq.0'");
  EXPECT_SG_ERROR(opt.load_state(without("step")), "Adam.load_state: missing entry 'step'");
  NamedTensors bad_shape = without("exp_avg.0");
  bad_shape.emplace_back("exp_avg.0", zeros({3, 2}));
  EXPECT_SG_ERROR(opt.load_state(bad_shape),
                  "Adam.load_state: entry 'exp_avg.0' has shape [3, 2] but parameter 0 has shape "
                  "[2, 3]");
  NamedTensors extra = good;
  extra.emplace_back("momentum_buffer.0", zeros({2, 3}));
  EXPECT_SG_ERROR(opt.load_state(extra), "Adam.load_state: unexpected entry 'momentum_buffer.0'");
  // Nothing was changed by the failed loads.
  EXPECT_EQ(opt.step_count(), 1);
  SGD sgd({p}, {.momentum = 0.9});
  EXPECT_SG_ERROR(sgd.load_state(good), "SGD.load_state: missing entry 'momentum_buffer.0'");
  // The state of one parameter into an optimizer of two loaded silently, the second parameter
  // left without its moments: the groups' parameter counts are kept and compared.
  Tensor q = ones({2, 3}).requires_grad_(), r = ones({4}).requires_grad_();
  Adam two({q, r});
  EXPECT_SG_ERROR(two.load_state(good),
                  "Adam.load_state: the state is of 1 parameter(s) in group 0, this optimizer "
                  "has 2 (the state of another model?)");
  EXPECT_EQ(two.step_count(), 0);
  // A state saved before the counts were kept is not checked for them.
  EXPECT_NO_THROW(opt.load_state(without("params")));
}

// ---- clip_grad_norm_ ----

TEST(ClipGradGolden, MatchesTorch) {
  for (const char* name : {"l2", "l2_unclipped", "l1", "inf", "l3"}) {
    const auto& c = golden("nn_optim", fmt::format("clip_{}", name));
    const double norm_type =
        c.params().at("norm_type").is_string() ? INFINITY : c.param<double>("norm_type");
    Tensor p0 = zeros({3, 2}).requires_grad_(), p1 = zeros({5}).requires_grad_();
    p0.set_grad(c.input("grad0"));
    p1.set_grad(c.input("grad1"));
    Tensor total = clip_grad_norm_({p0, p1}, c.param<double>("max_norm"), norm_type);
    EXPECT_TRUE(tensors_near(total, c.output("total_norm"), 1e-5, 1e-6)) << name;
    EXPECT_TRUE(tensors_near(p0.grad(), c.output("clipped0"), 1e-6, 1e-5)) << name;
    EXPECT_TRUE(tensors_near(p1.grad(), c.output("clipped1"), 1e-6, 1e-5)) << name;
  }
}

TEST(ClipGrad, SkipsMissingGradientsAndClipsToMaxNorm) {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({2}).requires_grad_();
  EXPECT_EQ(clip_grad_norm_({a, b}, 1.0).item<float>(), 0.0f);  // no gradients at all
  a.set_grad(tensor({3.0, 4.0}));                               // norm 5
  EXPECT_NEAR(clip_grad_norm_({a, b}, 1.0).item<float>(), 5.0f, 1e-6);
  EXPECT_FALSE(b.grad().defined());
  EXPECT_NEAR(a.grad().at<float>({0}), 0.6f, 1e-6);
  EXPECT_SG_ERROR(clip_grad_norm_({a}, -1.0), "clip_grad_norm_: max_norm must be non-negative");
}

// A float32 and a float64 parameter, as Adam takes them: the norms used to meet in one stack,
// which refused the two dtypes ("cat: tensors 0 and 1 have dtypes float32 and float64").
TEST(ClipGrad, GradientsOfTwoDtypesAreMeasuredTogether) {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({1}, kFloat64).requires_grad_();
  a.set_grad(tensor({3.0, 0.0}));
  b.set_grad(tensor({4.0}, kFloat64));  // the norm of both: 5
  EXPECT_NEAR(clip_grad_norm_({a, b}, 1.0).item<double>(), 5.0, 1e-6);
  EXPECT_NEAR(a.grad().at<float>({0}), 0.6f, 1e-6);
  EXPECT_NEAR(b.grad().at<double>({0}), 0.8, 1e-6);
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat64);
}

}  // namespace
}  // namespace sg::optim
