// DistributedDataParallel: N ranks with B/N examples each take the step one process takes with B.
#include "distributed/data_parallel.h"

#include "tests/distributed/gpu_per_rank.h"
#include "tests/distributed/small_mlp.h"

namespace sg::nn {
namespace {

using distributed::default_group;
using namespace sg::testing::small_mlp;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;

TEST(DistributedDataParallelTest, MatchesOneProcessWithTheGlobalBatch) {
  auto group = default_group();
  const int ranks = group->world_size(), rank = group->rank();
  if (kBatch % ranks != 0) GTEST_SKIP() << "the batch of " << kBatch << " does not split " << ranks;
  // Every rank starts from a different model: the broadcast must make them rank 0's.
  auto model = make_model(/*seed=*/7 + static_cast<uint64_t>(rank));
  // Tiny buckets (2 here: fc2 + fc1.bias, then fc1.weight), so gradients travel in two
  // all-reduces, the first started while backward still works on fc1.
  DistributedDataParallel ddp(model, group, {.bucket_cap_bytes = 300});
  EXPECT_EQ(ddp.bucket_count(), 2);
  EXPECT_EQ(ddp.gradient_bytes(), (kIn * kHidden + kHidden + kHidden * kOut + kOut) * 8);
  // SGD with momentum, not Adam: Adam's step hardly changes when every gradient is scaled, so it
  // would not notice a sum over ranks where a mean belongs.
  optim::SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});

  auto reference = make_model(/*seed=*/7);  // one process, the whole batch
  optim::SGD reference_optimizer(reference->parameters(), {.lr = 0.1, .momentum = 0.9});

  for (int step = 0; step < 5; ++step) {
    auto batch = global_batch(step);
    optimizer.zero_grad();
    loss_of(*model, shard(batch, rank, ranks)).backward();
    ddp.finish_gradient_sync();
    optimizer.step();

    reference_optimizer.zero_grad();
    loss_of(*reference, batch).backward();
    reference_optimizer.step();
  }
  // Not bit-identical: the reference sums each gradient over 8 rows in one matmul, the ranks over
  // 8/N rows and then over ranks, a different order of the same float64 additions (~1e-16
  // relative each), which 5 momentum steps carry along; 1e-10 leaves a wide margin and still
  // fails for any real difference (a sum instead of a mean is off by a factor N).
  expect_same_parameters(*model, *reference, 1e-10);
}

TEST(DistributedDataParallelTest, BitIdenticalToTheMeanOfShardGradientsInRankOrder) {
  auto group = default_group();
  const int ranks = group->world_size(), rank = group->rank();
  if (ranks > 2) GTEST_SKIP() << "MPI's summation order is fixed only for 2 ranks (a + b = b + a)";
  auto model = make_model(3);
  DistributedDataParallel ddp(model, group);
  optim::SGD optimizer(model->parameters(), {.lr = 0.1});
  auto reference = make_model(3);
  optim::SGD reference_optimizer(reference->parameters(), {.lr = 0.1});
  for (int step = 0; step < 3; ++step) {
    auto batch = global_batch(step);
    optimizer.zero_grad();
    loss_of(*model, shard(batch, rank, ranks)).backward();
    ddp.finish_gradient_sync();
    optimizer.step();
    // The same reduction, written out: each shard's gradient, summed in rank order, / N.
    std::vector<Tensor> sums;
    for (int r = 0; r < ranks; ++r) {
      reference_optimizer.zero_grad();
      loss_of(*reference, shard(batch, r, ranks)).backward();
      auto params = reference->parameters();
      for (size_t i = 0; i < params.size(); ++i) {
        if (r == 0)
          sums.push_back(params[i].grad().clone());
        else
          sums[i] = sums[i] + params[i].grad();
      }
    }
    auto params = reference->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(sums[i] / ranks);
    reference_optimizer.step();
  }
  expect_same_parameters(*model, *reference, /*exact*/ 0);
}

TEST(DistributedDataParallelTest, EveryRankEndsWithTheSameParameters) {
  auto group = default_group();
  auto model = make_model(11 + static_cast<uint64_t>(group->rank()));
  DistributedDataParallel ddp(model, group, {.bucket_cap_bytes = 64});
  optim::Adam optimizer(model->parameters(), {.lr = 0.01});
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    loss_of(*model, shard(global_batch(step), group->rank(), group->world_size())).backward();
    ddp.finish_gradient_sync();
    optimizer.step();
  }
  for (const Tensor& p : model->parameters()) {
    Tensor rank0 = p.detach().clone();
    group->broadcast(rank0, 0);
    EXPECT_TRUE(tensors_equal(p.detach(), rank0));
  }
}

TEST(DistributedDataParallelTest, SyncFinishesInsideBackwardAndToleratesUnusedParameters) {
  auto group = default_group();
  auto model = make_model(5);
  DistributedDataParallel ddp(model, group, {.bucket_cap_bytes = 200});
  // Backward reaches every parameter: when it returns, the gradients are already averaged.
  loss_of(*model, shard(global_batch(0), group->rank(), group->world_size())).backward();
  Tensor after_backward = model->fc1->weight.grad().clone();
  ddp.finish_gradient_sync();  // nothing left to do
  EXPECT_TRUE(tensors_equal(model->fc1->weight.grad(), after_backward));

  // A step that uses only fc1 (fc2 gets no gradient): finish_gradient_sync sends zeros for fc2,
  // so no rank waits for a bucket that never fills.
  model->zero_grad();
  model->fc1->forward(global_batch(1).first).sum().backward();
  ddp.finish_gradient_sync();
  EXPECT_TRUE(tensors_equal(model->fc2->weight.grad(), zeros({kOut, kHidden}, kFloat64)));
  EXPECT_TRUE(model->fc1->weight.grad().defined());
}

// The reference of gradient accumulation, written out: each rank's micro-batch gradients added up
// by backward in order, then the ranks' sums added in rank order and divided by N.
void set_mean_of_accumulated_shard_gradients(Mlp& model,
                                             const std::vector<std::pair<Tensor, Tensor>>& micro,
                                             int ranks) {
  std::vector<Tensor> sums;
  for (int r = 0; r < ranks; ++r) {
    model.zero_grad();
    for (const auto& batch : micro) {
      (loss_of(model, shard(batch, r, ranks)) / static_cast<double>(micro.size())).backward();
    }
    auto params = model.parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      if (r == 0)
        sums.push_back(params[i].grad().clone());
      else
        sums[i] = sums[i] + params[i].grad();
    }
  }
  auto params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(sums[i] / ranks);
}

TEST(DistributedDataParallelTest, NoSyncAccumulatesMicroBatchesAsOneLargeBatch) {
  auto group = default_group();
  const int ranks = group->world_size(), rank = group->rank();
  if (kBatch % ranks != 0) GTEST_SKIP() << "the batch of " << kBatch << " does not split " << ranks;
  constexpr int kMicro = 3;
  auto model = make_model(21);
  DistributedDataParallel ddp(model, group, {.bucket_cap_bytes = 300});
  optim::SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  auto written_out = make_model(21);  // the same arithmetic, in one process
  optim::SGD written_out_optimizer(written_out->parameters(), {.lr = 0.1, .momentum = 0.9});
  auto large = make_model(21);  // one process, all 3 x 8 rows in one batch
  optim::SGD large_optimizer(large->parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int step = 0; step < 3; ++step) {
    std::vector<std::pair<Tensor, Tensor>> micro;
    for (int k = 0; k < kMicro; ++k) micro.push_back(global_batch(100 + step * kMicro + k));
    optimizer.zero_grad();
    {
      auto guard = ddp.no_sync();
      for (int k = 0; k + 1 < kMicro; ++k) {
        (loss_of(*model, shard(micro[k], rank, ranks)) / kMicro).backward();
      }
      ddp.finish_gradient_sync();  // does nothing inside the guard
    }
    if (step == 0) {
      // Nothing was averaged yet: the gradients are this rank's own two micro-batches'.
      auto local = make_model(21);
      for (int k = 0; k + 1 < kMicro; ++k) {
        (loss_of(*local, shard(micro[k], rank, ranks)) / kMicro).backward();
      }
      EXPECT_TRUE(tensors_equal(model->fc1->weight.grad(), local->fc1->weight.grad()));
    }
    (loss_of(*model, shard(micro[kMicro - 1], rank, ranks)) / kMicro).backward();
    ddp.finish_gradient_sync();
    optimizer.step();

    set_mean_of_accumulated_shard_gradients(*written_out, micro, ranks);
    written_out_optimizer.step();

    large_optimizer.zero_grad();
    std::vector<Tensor> xs, ys;
    for (const auto& [x, y] : micro) xs.push_back(x), ys.push_back(y);
    loss_of(*large, {cat(xs), cat(ys)}).backward();
    large_optimizer.step();
  }
  // Bit for bit: the same additions in the same order.
  expect_same_parameters(*model, *written_out, /*exact*/ 0);
  // Against one large batch, only the order of the additions differs (as in
  // MatchesOneProcessWithTheGlobalBatch): float64 rounding, far below 1e-10.
  expect_same_parameters(*model, *large, 1e-10);
}

TEST(DistributedDataParallelTest, FinishSendsWhatNoSyncAccumulatedForParametersTheLastPassSkipped) {
  auto group = default_group();
  auto model = make_model(23);
  DistributedDataParallel ddp(model, group);
  const auto batch = shard(global_batch(7), group->rank(), group->world_size());
  {
    auto guard = ddp.no_sync();
    loss_of(*model, batch).backward();  // fc1 and fc2
  }
  Tensor fc2_mean = model->fc2->weight.grad().clone();
  group->all_reduce(fc2_mean, distributed::ReduceOp::Average);
  model->fc1->forward(batch.first).sum().backward();  // fc1 only: fc2's hook never runs
  ddp.finish_gradient_sync();
  EXPECT_TRUE(tensors_equal(model->fc2->weight.grad(), fc2_mean));
}

// Rank r's rows of 8 when the shards differ in size: 2 and 6 rows for 2 ranks, 1, 3, 4 for 3.
std::pair<int64_t, int64_t> uneven_rows(int rank, int ranks) {
  auto bound = [&](int r) { return int64_t{kBatch} * r * (r + 1) / (ranks * (ranks + 1)); };
  return {bound(rank), bound(rank + 1) - bound(rank)};
}

TEST(DistributedDataParallelTest, GlobalMeanLossIsTheMeanOverAllRowsWhenShardsDiffer) {
  auto group = default_group();
  const int ranks = group->world_size(), rank = group->rank();
  if (ranks > 3) GTEST_SKIP() << "the uneven split of 8 rows leaves a rank empty beyond 3 ranks";
  const auto [first, rows] = uneven_rows(rank, ranks);
  auto model = make_model(31), mean_of_means = make_model(31), reference = make_model(31);
  DistributedDataParallel ddp(model, group), naive_ddp(mean_of_means, group);
  optim::SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD naive_optimizer(mean_of_means->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD reference_optimizer(reference->parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int step = 0; step < 5; ++step) {
    const auto [x, y] = global_batch(200 + step);
    const Tensor my_x = x.narrow(0, first, rows), my_y = y.narrow(0, first, rows);
    optimizer.zero_grad();
    Tensor loss = ddp.global_mean_loss(mse_loss(model->forward(my_x), my_y, "sum"), rows);
    loss.backward();
    ddp.finish_gradient_sync();
    optimizer.step();
    // Each rank's own mean, averaged over ranks: every row of a small shard weighs more.
    naive_optimizer.zero_grad();
    (mse_loss(mean_of_means->forward(my_x), my_y, "sum") / static_cast<double>(rows)).backward();
    naive_ddp.finish_gradient_sync();
    naive_optimizer.step();

    reference_optimizer.zero_grad();
    Tensor reference_loss = mse_loss(reference->forward(x), y, "sum") / static_cast<double>(kBatch);
    reference_loss.backward();
    reference_optimizer.step();
    if (step == 0) {  // the mean over ranks of the returned values is the global mean
      Tensor mean = loss.detach().clone();
      group->all_reduce(mean, distributed::ReduceOp::Average);
      EXPECT_NEAR(mean.item<double>(), reference_loss.item<double>(), 1e-12);
    }
  }
  // Exact up to float64 rounding (the sums run in another order, and N / total is rounded once).
  expect_same_parameters(*model, *reference, 1e-10);
  if (ranks > 1) {  // the mean of means is a different step: the check above can fail
    Tensor a = mean_of_means->fc1->weight.detach(), b = reference->fc1->weight.detach();
    EXPECT_GT((a - b).abs().max().item<double>(), 1e-4);
  }
}

TEST(DistributedDataParallelTest, OnTheGpuTakesTheSameStepsAsOnTheCpu) {
  auto group = default_group();
  const std::string why_not = sg::testing::why_not_a_gpu_per_rank(*group);
  if (!why_not.empty()) GTEST_SKIP() << why_not;
  const Device gpu = Device::cuda(group->local_rank());
  auto on_cpu = make_model(13), on_gpu = make_model(13);
  on_gpu->to(gpu);
  // Buckets on the GPU are all-reduced by NCCL (a communicator of one when alone).
  DistributedDataParallel cpu_ddp(on_cpu, group, {.bucket_cap_bytes = 300});
  DistributedDataParallel gpu_ddp(on_gpu, group, {.bucket_cap_bytes = 300});
  optim::SGD cpu_opt(on_cpu->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD gpu_opt(on_gpu->parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int step = 0; step < 3; ++step) {
    auto batch = shard(global_batch(step), group->rank(), group->world_size());
    cpu_opt.zero_grad();
    loss_of(*on_cpu, batch).backward();
    cpu_ddp.finish_gradient_sync();
    cpu_opt.step();
    gpu_opt.zero_grad();
    loss_of(*on_gpu, {batch.first.to(gpu), batch.second.to(gpu)}).backward();
    gpu_ddp.finish_gradient_sync();
    gpu_opt.step();
  }
  auto a = on_gpu->parameters(), e = on_cpu->parameters();
  // float64 on both; the GPU's kernels sum in another order: rounding-level differences only.
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(tensors_near(a[i].to(kCPU), e[i], 1e-10, 1e-10));
}

TEST(DistributedDataParallelTest, RefusesAModuleWithoutParameters) {
  auto empty = std::make_shared<Sequential>();
  EXPECT_SG_ERROR(DistributedDataParallel(empty, default_group()),
                  "DistributedDataParallel: the module has no parameter that requires grad");
}

}  // namespace
}  // namespace sg::nn
