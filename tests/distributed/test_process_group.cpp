// sg::distributed's collectives: results, and the errors for bad or mismatched input.
#include "distributed/process_group.h"

#include "tests/distributed/gpu_per_rank.h"
#include "tests/support/testing.h"

namespace sg::distributed {
namespace {

using sg::testing::tensors_equal;
using sg::testing::tensors_near;

#define SKIP_UNLESS_RANKS(n)                                                \
  if (default_group()->world_size() < (n))                                  \
  GTEST_SKIP() << "needs " << (n) << " ranks: run under mpirun -np " << (n) \
               << " (ctest runs it so as distributed.np2)"

TEST(DistributedProcessGroupTest, AllReduceSumsAndAverages) {
  auto group = default_group();
  const int n = group->world_size(), r = group->rank();
  for (DType dtype : {kFloat32, kFloat64}) {
    Tensor t = full({2, 3}, r + 1.0, TensorOptions(dtype));
    group->all_reduce(t, ReduceOp::Sum);
    EXPECT_TRUE(tensors_equal(t, full({2, 3}, n * (n + 1) / 2.0, TensorOptions(dtype))));
    Tensor m = full({5}, 2.0 * r, TensorOptions(dtype));
    group->all_reduce(m, ReduceOp::Average);
    EXPECT_TRUE(tensors_near(m, full({5}, n - 1.0, TensorOptions(dtype)), 1e-6, 0));
  }
}

TEST(DistributedProcessGroupTest, AsyncAllReduceCompletesOnWait) {
  auto group = default_group();
  Tensor a = full({1000}, 1.0, TensorOptions(kFloat64));
  Tensor b = full({10}, 3.0, TensorOptions(kFloat32));
  auto first = group->all_reduce_async(a, ReduceOp::Sum);
  auto second = group->all_reduce_async(b, ReduceOp::Average);
  second->wait();
  first->wait();
  EXPECT_EQ(a.at<double>({999}), group->world_size());
  EXPECT_EQ(b.at<float>({0}), 3.0f);
}

TEST(DistributedProcessGroupTest, BroadcastCopiesTheRootsTensorAndBarrierReturns) {
  auto group = default_group();
  const int root = group->world_size() - 1;
  Tensor t = arange(0, 6, 1, kFloat32).reshape({2, 3}) + group->rank();
  group->broadcast(t, root);
  EXPECT_TRUE(tensors_equal(t, arange(0, 6, 1, kFloat32).reshape({2, 3}) + root));
  group->barrier();
}

TEST(DistributedProcessGroupTest, BadTensorsAreRefusedWithTheOpAndRank) {
  auto group = default_group();
  const std::string rank = std::to_string(group->rank());
  EXPECT_SG_ERROR(group->all_reduce(zeros({3}, TensorOptions(kBool))),
                  "all_reduce: rank " + rank + ": bool [3] on cpu is not supported");
  EXPECT_SG_ERROR(group->all_reduce(zeros({3}, TensorOptions(kInt64)), ReduceOp::Average),
                  "all_reduce: rank " + rank + ": int64 [3] on cpu cannot be averaged");
  EXPECT_SG_ERROR(group->all_gather_into(zeros({5}), zeros({2})),
                  "all_gather_into: rank " + rank + ": the output (float32 [5] on cpu) must be");
  EXPECT_SG_ERROR(group->all_reduce(zeros({3, 4}).t()), "is not contiguous");
  EXPECT_SG_ERROR(group->broadcast(zeros({3}), group->world_size()),
                  "broadcast: root " + std::to_string(group->world_size()) + " is not a rank");
}

TEST(DistributedProcessGroupTest, MismatchedShapesAreReportedOnEveryRank) {
  SKIP_UNLESS_RANKS(2);
  auto group = default_group();
  // Rank 0 sends 3 floats, the others 4: without the check MPI would read or write past a buffer.
  Tensor t = zeros({group->rank() == 0 ? 3 : 4});
  EXPECT_SG_ERROR(group->all_reduce(t), "all_reduce: ranks disagree");
  EXPECT_SG_ERROR(group->all_reduce(t), "rank 0 has float32 [3] on cpu, rank 1 has float32 [4]");
  Tensor d = zeros({2}, TensorOptions(group->rank() == 0 ? kFloat32 : kFloat64));
  EXPECT_SG_ERROR(group->broadcast(d, 0), "rank 1 has float64 [2] on cpu (root 0)");
}

TEST(DistributedProcessGroupTest, ATensorRefusedOnOneRankFailsEveryRank) {
  SKIP_UNLESS_RANKS(2);
  auto group = default_group();
  // Rank 1 passes bool: it fails with its own reason, rank 0 learns of it instead of waiting.
  Tensor t = zeros({3}, TensorOptions(group->rank() == 1 ? kBool : kFloat32));
  if (group->rank() == 1) {
    EXPECT_SG_ERROR(group->all_reduce(t), "all_reduce: rank 1: bool [3] on cpu is not supported");
  } else {
    EXPECT_SG_ERROR(group->all_reduce(t), "all_reduce: rank 1's tensor was refused");
  }
  group->barrier();
}

TEST(DistributedProcessGroupTest, DifferentCollectivesOnDifferentRanksAreReported) {
  SKIP_UNLESS_RANKS(2);
  auto group = default_group();
  Tensor t = zeros({2});
  if (group->rank() == 0) {
    EXPECT_SG_ERROR(group->all_reduce(t), "in a different collective");
  } else {
    EXPECT_SG_ERROR(group->broadcast(t, 0), "in a different collective");
  }
  group->barrier();  // and the group still works afterwards
}

TEST(DistributedProcessGroupTest, CudaTensorsGoThroughNccl) {
  auto group = default_group();
  const std::string why_not = sg::testing::why_not_a_gpu_per_rank(*group);
  if (!why_not.empty()) GTEST_SKIP() << why_not;
  const Device device = Device::cuda(group->local_rank());
  const int n = group->world_size(), r = group->rank();
  for (DType dtype : {kFloat32, kFloat64}) {
    Tensor t = full({3, 5}, r + 1.0, TensorOptions(dtype).device(device));
    group->all_reduce(t, ReduceOp::Sum);
    EXPECT_TRUE(tensors_equal(t.to(kCPU), full({3, 5}, n * (n + 1) / 2.0, dtype)));
    Tensor m = full({7}, 2.0 * r, TensorOptions(dtype).device(device));
    auto work = group->all_reduce_async(m, ReduceOp::Average);
    work->wait();
    EXPECT_TRUE(tensors_near(m.to(kCPU), full({7}, n - 1.0, dtype), 1e-6, 0));
    Tensor b = full({4}, static_cast<double>(r), TensorOptions(dtype).device(device));
    group->broadcast(b, n - 1);
    EXPECT_TRUE(tensors_equal(b.to(kCPU), full({4}, n - 1.0, dtype)));
  }
  // int64 sums and all-gathers go through NCCL too.
  Tensor mine = full({3}, static_cast<double>(r), TensorOptions(kInt64).device(device));
  Tensor all = zeros({3 * n}, TensorOptions(kInt64).device(device));
  group->all_gather_into(all, mine);
  std::vector<int64_t> expected;
  for (int q = 0; q < n; ++q) expected.insert(expected.end(), 3, q);
  EXPECT_EQ(all.to(kCPU).to_vector<int64_t>(), expected);
  group->all_reduce(mine, ReduceOp::Sum);
  EXPECT_EQ(mine.to(kCPU).to_vector<int64_t>(), std::vector<int64_t>(3, n * (n - 1) / 2));
  EXPECT_EQ(group->backend_name(device), "nccl");
}

}  // namespace
}  // namespace sg::distributed
