// Tests for nn/optim/lr_scheduler.cpp: each schedule's values against its formula (numbers from
// the Annotated Transformer's rate() and torch.optim.lr_scheduler, computed in Python), which lr
// each optimizer step uses, and resuming from a checkpoint.
#include "nn/optim/lr_scheduler.h"

#include <cmath>
#include <numbers>

#include "nn/optim/adam.h"
#include "nn/optim/sgd.h"
#include "tests/support/testing.h"

namespace sg::optim {
namespace {

Tensor param() { return zeros({1}).requires_grad_(); }

TEST(NoamSchedule, MatchesTheAnnotatedTransformersRate) {
  Tensor p = param();
  Adam opt({p}, {.lr = 1.0, .betas = {0.9, 0.98}, .eps = 1e-9});
  NoamLR noam(opt, /*d_model=*/512, /*warmup=*/4000);
  // rate(step, 512, 1.0, 4000) from the Annotated Transformer, printed by Python.
  const std::vector<std::pair<int64_t, double>> expected = {
      {0, 1.746928107421711e-07},   {1, 1.746928107421711e-07},     {2, 3.493856214843422e-07},
      {100, 1.746928107421711e-05}, {3999, 0.0006985965501579421},  {4000, 0.0006987712429686843},
      {4001, 0.000698683912937353}, {10000, 0.00044194173824159226}};
  for (const auto& [step, lr] : expected) EXPECT_NEAR(noam.lr_at(step), lr, 1e-15 + 1e-12 * lr);
  // The peak is at warmup: factor / sqrt(d_model · warmup).
  EXPECT_NEAR(noam.lr_at(4000), 1.0 / std::sqrt(512.0 * 4000.0), 1e-15);
  NoamLR scaled(opt, 32, 400, /*factor=*/2.0);
  EXPECT_NEAR(scaled.lr_at(400), 0.01767766952966369, 1e-15);
  EXPECT_NEAR(scaled.lr_at(1000), 0.011180339887498949, 1e-15);
}

TEST(NoamSchedule, EachOptimizerStepUsesTheLrLambdaLRWouldGive) {
  // torch: LambdaLR(Adam(lr=1), rate) gives the updates lrs [rate(0), rate(1), rate(2)], i.e.
  // [1.7469e-07, 1.7469e-07, 3.4939e-07]: the constructor sets the first.
  Tensor p = param();
  Adam opt({p}, {.lr = 1.0});
  NoamLR noam(opt, 512, 4000);
  std::vector<double> used;
  for (int i = 0; i < 3; ++i) {
    used.push_back(opt.lr());
    p.set_grad(ones({1}));
    opt.step();
    noam.step();
  }
  EXPECT_NEAR(used[0], 1.746928107421711e-07, 1e-18);
  EXPECT_NEAR(used[1], 1.746928107421711e-07, 1e-18);
  EXPECT_NEAR(used[2], 3.493856214843422e-07, 1e-18);
}

TEST(LrScheduleWarmupCosine, RisesLinearlyThenFollowsHalfACosine) {
  Tensor p = param();
  SGD opt({p}, {.lr = 0.1});
  WarmupCosineLR schedule(opt, /*warmup=*/10, /*total=*/110, /*min_lr=*/0.01);
  EXPECT_EQ(opt.lr(), 0.0);  // step 0 of a linear warmup from 0
  EXPECT_NEAR(schedule.lr_at(5), 0.05, 1e-15);
  EXPECT_NEAR(schedule.lr_at(10), 0.1, 1e-15);  // the peak, cos(0) = 1
  // Halfway through the decay cos(π/2) = 0: the middle of base and min_lr.
  EXPECT_NEAR(schedule.lr_at(60), 0.055, 1e-15);
  const double quarter = 0.01 + 0.09 * 0.5 * (1 + std::cos(std::numbers::pi * 0.25));
  EXPECT_NEAR(schedule.lr_at(35), quarter, 1e-15);
  EXPECT_NEAR(schedule.lr_at(110), 0.01, 1e-15);
  EXPECT_NEAR(schedule.lr_at(500), 0.01, 1e-15);  // flat after total
}

TEST(LrScheduleStep, DecaysByGammaEveryStepSize) {
  Tensor p = param();
  SGD opt({p}, {.lr = 0.1});
  StepLR schedule(opt, /*step_size=*/3, /*gamma=*/0.5);
  const double expected[] = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025};
  for (int64_t s = 0; s < 7; ++s) EXPECT_NEAR(schedule.lr_at(s), expected[s], 1e-15) << s;
  // step() reads the optimizer's count and scales its initial lr, not the current one.
  for (int i = 0; i < 4; ++i) {
    p.set_grad(ones({1}));
    opt.step();
    schedule.step();
  }
  EXPECT_NEAR(opt.lr(), 0.05, 1e-15);
  EXPECT_EQ(opt.initial_lr(), 0.1);
}

TEST(LrScheduleLambda, ScalesTheInitialLr) {
  Tensor p = param();
  SGD opt({p}, {.lr = 2.0});
  LambdaLR schedule(opt, [](int64_t s) { return 1.0 / static_cast<double>(s + 1); });
  EXPECT_EQ(opt.lr(), 2.0);
  EXPECT_EQ(schedule.lr_at(3), 0.5);
}

TEST(LrScheduleResume, FollowsTheOptimizersRestoredStepCount) {
  Tensor p = param(), q = param();
  Adam a({p}, {.lr = 1.0});
  NoamLR sa(a, 64, 10);
  for (int i = 0; i < 5; ++i) {
    p.set_grad(ones({1}));
    a.step();
    sa.step();
  }
  Adam b({q}, {.lr = 1.0});
  NoamLR sb(b, 64, 10);
  b.load_state(a.state());
  sb.step();
  EXPECT_EQ(b.lr(), a.lr());
  EXPECT_EQ(b.lr(), sb.lr_at(5));
}

TEST(LrScheduleErrors, RejectBadArguments) {
  Tensor p = param();
  SGD opt({p}, {.lr = 0.1});
  EXPECT_SG_ERROR(NoamLR(opt, 0, 10), "NoamLR: d_model and warmup must be positive, got 0 and 10");
  EXPECT_SG_ERROR(WarmupCosineLR(opt, 10, 10), "WarmupCosineLR: need 0 <= warmup < total");
  EXPECT_SG_ERROR(WarmupCosineLR(opt, 1, 10, 0.5), "WarmupCosineLR: min_lr must be in [0, base");
  EXPECT_SG_ERROR(StepLR(opt, 0), "StepLR: step_size must be positive, got 0");
  EXPECT_SG_ERROR(LambdaLR(opt, nullptr), "LambdaLR: factor is an empty function");
  // An lr that is no learning rate used to be refused by the optimizer, in its name ("SGD:
  // learning rate must be non-negative"), with neither the scheduler nor the step.
  EXPECT_SG_ERROR(NoamLR(opt, 8, 4, -1.0),
                  "NoamLR: the lr for step 0 of group 0 (base lr 0.1) is -0.0");
  EXPECT_SG_ERROR(LambdaLR(opt, [](int64_t) { return std::nan(""); }),
                  "LambdaLR: the lr for step 0 of group 0 (base lr 0.1) is nan; a learning rate "
                  "is finite and non-negative");
  EXPECT_DOUBLE_EQ(opt.lr(), 0.1);  // nothing changed
}

}  // namespace
}  // namespace sg::optim
