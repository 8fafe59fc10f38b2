// DistributedDataParallel: N ranks with B/N examples each take the step one process takes with B.
#include "distributed/data_parallel.h"

#include "nn/nn.h"
#include "tests/distributed/gpu_per_rank.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using distributed::default_group;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;

constexpr int64_t kBatch = 8, kIn = 5, kHidden = 7, kOut = 3;

class Mlp : public UnaryModule {
 public:
  Mlp() : UnaryModule("Mlp") {
    fc1 = register_module("fc1", std::make_shared<Linear>(kIn, kHidden));
    fc2 = register_module("fc2", std::make_shared<Linear>(kHidden, kOut));
  }
  Tensor forward(const Tensor& x) override { return fc2->forward(fc1->forward(x).tanh()); }
  std::shared_ptr<Linear> fc1, fc2;
};

std::shared_ptr<Mlp> make_model(uint64_t seed) {
  manual_seed(seed);
  auto model = std::make_shared<Mlp>();
  model->to(kFloat64);
  return model;
}

// The global batch of step `step`, the same on every rank (each takes its rows).
std::pair<Tensor, Tensor> global_batch(int step) {
  Generator gen(1000 + static_cast<uint64_t>(step));
  return {randn({kBatch, kIn}, gen, kFloat64), randn({kBatch, kOut}, gen, kFloat64)};
}

std::pair<Tensor, Tensor> shard(const std::pair<Tensor, Tensor>& batch, int rank, int ranks) {
  const int64_t rows = kBatch / ranks;
  return {batch.first.narrow(0, rank * rows, rows), batch.second.narrow(0, rank * rows, rows)};
}

Tensor loss_of(Mlp& model, const std::pair<Tensor, Tensor>& batch) {
  return mse_loss(model.forward(batch.first), batch.second);
}

void expect_same_parameters(Module& actual, Module& expected, double rtol) {
  auto a = actual.named_parameters(), e = expected.named_parameters();
  ASSERT_EQ(a.size(), e.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (rtol == 0) {
      EXPECT_TRUE(tensors_equal(a[i].second, e[i].second)) << a[i].first;
    } else {
      EXPECT_TRUE(tensors_near(a[i].second, e[i].second, rtol, rtol)) << a[i].first;
    }
  }
}

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
