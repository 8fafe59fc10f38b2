// ZeroRedundancyOptimizer (ZeRO-1): each rank keeps its shard of Adam's state, yet training takes
// the unsharded optimizer's steps bit for bit, and its consolidated state is the unsharded state.
#include "distributed/zero_redundancy_optimizer.h"

#include "distributed/data_parallel.h"
#include "tests/distributed/small_mlp.h"

namespace sg::distributed {
namespace {

using namespace sg::testing::small_mlp;
using sg::testing::tensors_equal;

constexpr optim::AdamOptions kAdam{.lr = 0.01, .betas = {0.9, 0.98}, .eps = 1e-9};

std::unique_ptr<optim::Optimizer> make_adam(std::vector<Tensor> params) {
  return std::make_unique<optim::Adam>(std::move(params), kAdam);
}

// Tiny all-gathers (3 float64 per rank), so that parameters cross their edges.
ZeroRedundancyOptions tiny_gathers() { return {.gather_bytes = 24}; }

// `steps` data-parallel steps of `model` with `optimizer`, from step `first` of the data.
void train(Mlp& model, nn::DistributedDataParallel& ddp, optim::Optimizer& optimizer, int first,
           int steps) {
  auto group = default_group();
  for (int step = first; step < first + steps; ++step) {
    optimizer.zero_grad();
    loss_of(model, shard(global_batch(step), group->rank(), group->world_size())).backward();
    ddp.finish_gradient_sync();
    optimizer.step();
  }
}

int64_t sum_over_ranks(int64_t value) {
  Tensor t = full({1}, static_cast<double>(value), TensorOptions(kInt64));
  default_group()->all_reduce(t, ReduceOp::Sum);
  return t.item<int64_t>();
}

TEST(ZeroRedundancyOptimizerTest, TakesTheUnshardedOptimizersStepsBitForBit) {
  auto group = default_group();
  auto sharded = make_model(41), unsharded = make_model(41);
  nn::DistributedDataParallel sharded_ddp(sharded, group), unsharded_ddp(unsharded, group);
  ZeroRedundancyOptimizer zero(sharded->parameters(), group, make_adam, tiny_gathers());
  optim::Adam adam(unsharded->parameters(), kAdam);
  train(*sharded, sharded_ddp, zero, 0, 5);
  train(*unsharded, unsharded_ddp, adam, 0, 5);
  expect_same_parameters(*sharded, *unsharded, /*exact*/ 0);
  EXPECT_EQ(zero.step_count(), 5);

  // The state is split: the shards cover the parameters once, and the ranks' bytes add up to the
  // unsharded optimizer's (two moments per parameter).
  const auto [first, count] = zero.shard(group->rank());
  EXPECT_EQ(zero.shard_optimizer().params().size(), count);
  int64_t mine = 0, all = 0;
  for (size_t i = 0; i < adam.params().size(); ++i) {
    const int64_t bytes = 2 * adam.params()[i].numel() * 8;
    all += bytes;
    if (i >= first && i < first + count) mine += bytes;
  }
  EXPECT_EQ(zero.state_bytes(), mine);
  EXPECT_EQ(sum_over_ranks(zero.state_bytes()), all);
  if (group->world_size() > 1) {
    EXPECT_LT(zero.state_bytes(), all);
  }
  EXPECT_EQ(zero.buffer_bytes(), 3 * 8 * (group->world_size() + 1));
}

TEST(ZeroRedundancyOptimizerTest, ConsolidatedStateIsTheUnshardedState) {
  auto group = default_group();
  auto sharded = make_model(43), unsharded = make_model(43);
  nn::DistributedDataParallel sharded_ddp(sharded, group), unsharded_ddp(unsharded, group);
  ZeroRedundancyOptimizer zero(sharded->parameters(), group, make_adam);
  optim::Adam adam(unsharded->parameters(), kAdam);
  train(*sharded, sharded_ddp, zero, 0, 3);
  train(*unsharded, unsharded_ddp, adam, 0, 3);

  EXPECT_SG_ERROR((void)zero.state(), "call consolidate_state() on every rank first");
  const int to = group->world_size() - 1;  // the last rank, to show it can be any
  zero.consolidate_state(to);
  if (group->rank() == to) {
    const optim::NamedTensors a = zero.state(), e = adam.state();
    ASSERT_EQ(a.size(), e.size());
    std::map<std::string, Tensor> expected(e.begin(), e.end());
    for (const auto& [name, t] : a) {
      ASSERT_TRUE(expected.count(name)) << name;
      EXPECT_TRUE(tensors_equal(t, expected.at(name))) << name;
    }
  } else {
    EXPECT_SG_ERROR((void)zero.state(), "holds the state of parameters");
  }
  train(*sharded, sharded_ddp, zero, 3, 1);  // a step makes the consolidated copy stale
  EXPECT_SG_ERROR((void)zero.state(), "call consolidate_state() on every rank first");
}

TEST(ZeroRedundancyOptimizerTest, LoadsAnUnshardedStateAndItsOwnConsolidatedOne) {
  auto group = default_group();
  auto model = make_model(47), reference = make_model(47);
  nn::DistributedDataParallel ddp(model, group), reference_ddp(reference, group);
  optim::Adam adam(reference->parameters(), kAdam);
  train(*reference, reference_ddp, adam, 0, 2);
  // A sharded optimizer resumes from the unsharded one's checkpoint (the same on every rank)...
  {
    NoGradGuard no_grad;
    auto p = model->parameters(), r = reference->parameters();
    for (size_t i = 0; i < p.size(); ++i) p[i].copy_(r[i]);
  }
  ZeroRedundancyOptimizer zero(model->parameters(), group, make_adam, tiny_gathers());
  zero.load_state(adam.state());
  EXPECT_EQ(zero.step_count(), 2);
  train(*model, ddp, zero, 2, 2);
  train(*reference, reference_ddp, adam, 2, 2);
  expect_same_parameters(*model, *reference, /*exact*/ 0);
  // ... and an unsharded one from the sharded one's consolidated state.
  zero.consolidate_state(0);
  if (group->rank() == 0) {
    optim::Adam restored(make_model(1)->parameters(), kAdam);
    restored.load_state(zero.state());
    const optim::NamedTensors e = adam.state();
    const std::map<std::string, Tensor> expected(e.begin(), e.end());
    for (const auto& [name, t] : restored.state()) {
      EXPECT_TRUE(tensors_equal(t, expected.at(name))) << name;
    }
  }
}

TEST(ZeroRedundancyOptimizerTest, BadStateIsRefusedOnEveryRank) {
  auto group = default_group();
  auto model = make_model(53);
  nn::DistributedDataParallel ddp(model, group);
  ZeroRedundancyOptimizer zero(model->parameters(), group, make_adam);
  train(*model, ddp, zero, 0, 1);
  zero.consolidate_state(0);
  optim::NamedTensors state;
  Tensor step = scalar_tensor(1, kInt64), lr = scalar_tensor(0.01, kFloat64);
  EXPECT_SG_ERROR(zero.load_state({{"step", step}, {"lr", lr}, {"exp_avg.99", step}}),
                  "ZeroRedundancyOptimizer.load_state: unexpected entry 'exp_avg.99'");
  // An entry only the last rank owns has the wrong shape: it says why, the others that it did.
  const int last = group->world_size() - 1;
  const size_t index = zero.params().size() - 1;  // fc2.bias, in the last shard
  optim::NamedTensors bad = {{"step", step},
                             {"lr", lr},
                             {fmt::format("step.{}", index), step},
                             {fmt::format("exp_avg.{}", index), zeros({2}, kFloat64)},
                             {fmt::format("exp_avg_sq.{}", index), zeros({2}, kFloat64)}};
  if (group->rank() == last) {
    EXPECT_SG_ERROR(zero.load_state(bad), "has shape [2] but parameter");
  } else {
    EXPECT_SG_ERROR(zero.load_state(bad), fmt::format("rank {}'s shard was refused", last));
  }
}

TEST(ZeroRedundancyOptimizerTest, ShardsCoverEveryParameterOnce) {
  auto group = default_group();
  auto model = make_model(59);
  ZeroRedundancyOptimizer zero(model->parameters(), group, make_adam);
  size_t next = 0;
  for (int r = 0; r < group->world_size(); ++r) {
    const auto [first, count] = zero.shard(r);
    EXPECT_EQ(first, next);
    EXPECT_GE(count, 1u);
    next = first + count;
  }
  EXPECT_EQ(next, model->parameters().size());
  EXPECT_SG_ERROR(
      ZeroRedundancyOptimizer(model->parameters(), group, make_adam, {.gather_bytes = 0}),
      "gather_bytes must be > 0");
}

}  // namespace
}  // namespace sg::distributed
