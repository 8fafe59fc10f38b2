// Tests for parameter groups in nn/optim/: two groups with different lr and weight decay (and
// betas or momentum) against three steps of torch.optim on the same gradients, a LambdaLR schedule
// scaling each group's base lr, add_param_group, per-group state round trips, and the checks on a
// loaded state's step counts.
#include <cmath>
#include <limits>
#include <vector>

#include "nn/linear.h"
#include "nn/optim/adam.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/sgd.h"
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg::optim {
namespace {

using sg::testing::golden;
using sg::testing::tensors_near;

// p0 in group 0, p1 in group 1, as scripts/golden/nn_optim.py's two_groups() builds them; with a
// schedule, each group's lr after every step is compared too.
template <typename MakeOptimizer>
void expect_groups_match_torch(const char* name, MakeOptimizer make, bool lambda_schedule = false) {
  const auto& c = golden("nn_optim", name);
  Tensor p0 = c.input("p0").requires_grad_(), p1 = c.input("p1").requires_grad_();
  auto opt = make(p0, p1);
  std::unique_ptr<LambdaLR> schedule;
  if (lambda_schedule) {
    schedule = std::make_unique<LambdaLR>(
        *opt, [](int64_t s) { return 1.0 / static_cast<double>(s + 1); });
  }
  ASSERT_EQ(opt->num_param_groups(), 2u);
  for (int s = 1; s <= 3; ++s) {
    p0.set_grad(c.input(fmt::format("grad0_step{}", s)));
    p1.set_grad(c.input(fmt::format("grad1_step{}", s)));
    opt->step();
    if (schedule) {
      schedule->step();
      const std::vector<double> lrs = c.output(fmt::format("lr_step{}", s)).to_vector<double>();
      EXPECT_DOUBLE_EQ(opt->lr(0), lrs[0]) << name << " step " << s;
      EXPECT_DOUBLE_EQ(opt->lr(1), lrs[1]) << name << " step " << s;
    }
    EXPECT_TRUE(tensors_near(p0, c.output(fmt::format("p0_step{}", s)), 1e-6, 1e-5))
        << name << ": parameter 0 after step " << s;
    EXPECT_TRUE(tensors_near(p1, c.output(fmt::format("p1_step{}", s)), 1e-6, 1e-5))
        << name << ": parameter 1 after step " << s;
  }
  size_t compared = 0;
  for (const auto& [key, value] : opt->state()) {
    if (Optimizer::is_bookkeeping_entry(key)) continue;
    EXPECT_TRUE(tensors_near(value, c.output(key), 1e-6, 1e-5)) << name << ": " << key;
    ++compared;
  }
  EXPECT_GT(compared, 0u) << name;
}

TEST(OptimGroupsGolden, SgdWithTwoGroupsMatchesTorch) {
  expect_groups_match_torch("sgd_groups", [](Tensor p0, Tensor p1) {
    return std::make_unique<SGD>(
        std::vector<SGDParamGroup>{
            {.params = {p0}}, {.params = {p1}, .lr = 0.02, .momentum = 0.5, .weight_decay = 0.0}},
        SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
  });
}

TEST(OptimGroupsGolden, AdamAndAdamWWithTwoGroupsMatchTorch) {
  expect_groups_match_torch("adam_groups", [](Tensor p0, Tensor p1) {
    return std::make_unique<Adam>(
        std::vector<AdamParamGroup>{
            {.params = {p0}},
            {.params = {p1}, .lr = 0.05, .betas = std::pair{0.8, 0.9}, .weight_decay = 0.0}},
        AdamOptions{.lr = 0.01, .weight_decay = 0.1});
  });
  expect_groups_match_torch("adamw_groups", [](Tensor p0, Tensor p1) {
    return std::make_unique<AdamW>(
        std::vector<AdamParamGroup>{{.params = {p0}},
                                    {.params = {p1}, .lr = 0.03, .weight_decay = 0.0}},
        AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
  });
}

TEST(OptimGroupsGolden, ASchedulerScalesEveryGroupsBaseLr) {
  expect_groups_match_torch(
      "adamw_groups_lambda",
      [](Tensor p0, Tensor p1) {
        return std::make_unique<AdamW>(
            std::vector<AdamParamGroup>{{.params = {p0}},
                                        {.params = {p1}, .lr = 0.03, .weight_decay = 0.0}},
            AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
      },
      /*lambda_schedule=*/true);
}

TEST(OptimGroups, NoDecayForBiasesAndOptionsFilledFromTheDefaults) {
  manual_seed(0);
  nn::Linear fc(3, 2);
  AdamW opt({{.params = {fc.weight}}, {.params = {fc.bias}, .weight_decay = 0.0}},
            {.lr = 0.1, .weight_decay = 0.5});
  EXPECT_EQ(opt.options(0).weight_decay, 0.5);
  EXPECT_EQ(opt.options(1).weight_decay, 0.0);
  EXPECT_EQ(opt.options(1).lr, 0.1);  // unset in the group: the optimizer's
  EXPECT_EQ(opt.params().size(), 2u);
  EXPECT_TRUE(opt.group_params(1)[0].is_same(fc.bias));
  // With zero gradients Adam's step is 0, so only the decay moves a parameter.
  Tensor weight_before = fc.weight.clone(), bias_before = fc.bias.clone();
  fc.weight.set_grad(zeros_like(fc.weight));
  fc.bias.set_grad(zeros_like(fc.bias));
  opt.step();
  EXPECT_TRUE(tensors_near(fc.weight, weight_before * (1.0 - 0.1 * 0.5), 1e-7, 1e-6));
  EXPECT_TRUE(tensors_near(fc.bias, bias_before, 0, 0));
}

TEST(OptimGroups, SetLrAndSchedulesActOnEveryGroup) {
  Tensor a = zeros({1}).requires_grad_(), b = zeros({1}).requires_grad_();
  SGD opt({{.params = {a}}, {.params = {b}, .lr = 0.5}}, {.lr = 0.1});
  EXPECT_EQ(opt.lr(0), 0.1);
  EXPECT_EQ(opt.lr(1), 0.5);
  StepLR schedule(opt, /*step_size=*/1, /*gamma=*/0.5);
  a.set_grad(ones({1}));
  b.set_grad(ones({1}));
  opt.step();
  schedule.step();
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.05);
  EXPECT_DOUBLE_EQ(opt.lr(1), 0.25);
  EXPECT_EQ(opt.initial_lr(1), 0.5);
  opt.set_lr(1, 0.125);
  EXPECT_EQ(opt.lr(0), 0.05);
  EXPECT_EQ(opt.lr(1), 0.125);
  opt.set_lr(0.01);  // every group
  EXPECT_EQ(opt.lr(0), 0.01);
  EXPECT_EQ(opt.lr(1), 0.01);
  EXPECT_SG_ERROR(opt.lr(2), "SGD: no parameter group 2 (it has 2)");
  EXPECT_SG_ERROR(opt.set_lr(1, std::nan("")), "SGD: learning rate must be non-negative, got nan");
  // min_lr above a group's base lr is refused for that group.
  EXPECT_SG_ERROR(WarmupCosineLR(opt, 1, 10, 0.2),
                  "min_lr must be in [0, base lr 0.1] (of group 0)");
}

TEST(OptimGroups, AddParamGroupAndItsState) {
  Tensor a = ones({2}).requires_grad_(), b = ones({3}).requires_grad_();
  SGD opt({a}, {.lr = 0.1, .momentum = 0.9});
  a.set_grad(ones({2}));
  opt.step();
  // A group added later (layers unfrozen): momentum off there, so it keeps no buffer.
  opt.add_param_group({.params = {b}, .lr = 0.01, .momentum = 0.0});
  EXPECT_EQ(opt.num_param_groups(), 2u);
  EXPECT_SG_ERROR(opt.add_param_group({.params = {a}}),
                  "SGD: parameter 2 is the same tensor as parameter 0");
  a.set_grad(ones({2}));
  b.set_grad(ones({3}));
  opt.step();
  EXPECT_NEAR(b.at<float>({0}), 0.99f, 1e-7);  // 1 - 0.01 · 1, plain SGD
  std::vector<std::string> names;
  for (const auto& [name, _] : opt.state()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"step", "lr", "params", "step.0", "momentum_buffer.0",
                                             "step.1"}));
}

TEST(OptimGroups, StateRoundTripWithGroupsResumesExactly) {
  auto grad_at = [](int s, int64_t n) { return full({n}, 0.1 * s) - arange(n, kFloat32) * 0.2; };
  auto make = [](Tensor x, Tensor y) {
    return std::make_unique<Adam>(
        std::vector<AdamParamGroup>{{.params = {x}, .amsgrad = true},
                                    {.params = {y}, .lr = 0.3, .weight_decay = 0.1}},
        AdamOptions{.lr = 0.1});
  };
  Tensor xa = ones({3}).requires_grad_(), ya = ones({2}).requires_grad_();
  auto a = make(xa, ya);
  StepLR schedule_a(*a, 1, 0.5);
  for (int s = 1; s <= 2; ++s) {
    xa.set_grad(grad_at(s, 3));
    ya.set_grad(grad_at(s, 2));
    a->step();
    schedule_a.step();
  }
  NamedTensors state = a->state();
  Tensor xc = xa.detach().clone().requires_grad_(), yc = ya.detach().clone().requires_grad_();
  auto c = make(xc, yc);
  c->load_state(state);
  EXPECT_EQ(c->lr(0), a->lr(0));
  EXPECT_EQ(c->lr(1), a->lr(1));
  for (Tensor* p : {&xa, &xc}) p->set_grad(grad_at(3, 3));
  for (Tensor* p : {&ya, &yc}) p->set_grad(grad_at(3, 2));
  a->step();
  c->step();
  EXPECT_TRUE(tensors_near(xc, xa, 0, 0));
  EXPECT_TRUE(tensors_near(yc, ya, 0, 0));
  // One lr per group: a state of one group does not load into two.
  Tensor z = ones({3}).requires_grad_();
  Adam one({z}, {.lr = 0.1});
  EXPECT_SG_ERROR(one.load_state(state),
                  "Adam.load_state: entry 'lr' must hold one float per parameter group (1)");
}

// A loaded step count is an int64 of at least 1: read through a double, a float64, a bool, 2.5, 0
// or NaN used to become some count (or restart Adam's bias correction) without a word.
TEST(OptimState, StepCountsAreCheckedIntegers) {
  Tensor p = ones({2}).requires_grad_();
  Adam opt({p});
  p.set_grad(ones({2}));
  opt.step();
  opt.step();
  const NamedTensors good = opt.state();
  auto with = [&](const std::string& name, const Tensor& value) {
    NamedTensors s;
    for (const auto& [n, t] : good) s.emplace_back(n, n == name ? value : t);
    return s;
  };
  EXPECT_SG_ERROR(opt.load_state(with("step.0", scalar_tensor(2.0, kFloat64))),
                  "Adam.load_state: entry 'step.0' must be one int64 step count, got float64");
  EXPECT_SG_ERROR(opt.load_state(with("step.0", scalar_tensor(2.5, kFloat64))),
                  "entry 'step.0' must be one int64 step count");
  EXPECT_SG_ERROR(opt.load_state(with("step.0", scalar_tensor(std::nan(""), kFloat64))),
                  "entry 'step.0' must be one int64 step count");
  EXPECT_SG_ERROR(opt.load_state(with("step", scalar_tensor(1.0, kBool))),
                  "Adam.load_state: entry 'step' must be one int64 step count, got bool");
  EXPECT_SG_ERROR(opt.load_state(with("step.0", scalar_tensor(0.0, kInt64))),
                  "Adam.load_state: entry 'step.0' = 0 is not a step count in [1, step = 2]");
  EXPECT_SG_ERROR(opt.load_state(with("step.0", scalar_tensor(3.0, kInt64))),
                  "entry 'step.0' = 3 is not a step count in [1, step = 2]");
  EXPECT_SG_ERROR(opt.load_state(with("step", scalar_tensor(-1.0, kInt64))),
                  "Adam.load_state: entry 'step' = -1 is negative");
  // INT64_MAX would overflow at the next step (and, read as a double, round): the lr schedule
  // would change with no word of why.
  const Tensor huge = from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::max()}, {});
  EXPECT_SG_ERROR(opt.load_state(with("step", huge)),
                  "Adam.load_state: entry 'step' = 9223372036854775807 is above the largest step "
                  "count, 2^53 = 9007199254740992");
  EXPECT_SG_ERROR(
      opt.load_state(with("lr", scalar_tensor(std::numeric_limits<double>::infinity(), kFloat64))),
      "Adam.load_state: entry 'lr' holds inf; a learning rate is finite and non-negative");
  EXPECT_EQ(opt.step_count(), 2);  // untouched by the failed loads
  EXPECT_NO_THROW(opt.load_state(good));
  // At the limit itself a checkpoint loads, and the next step is refused.
  ASSERT_NO_THROW(
      opt.load_state(with("step", from_vector(std::vector<int64_t>{kMaxStepCount}, {}))));
  EXPECT_SG_ERROR(opt.step(), "Adam.step: the step count is at its limit, 2^53 = 9007199254740992");
}

}  // namespace
}  // namespace sg::optim
