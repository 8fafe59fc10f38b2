// The collectives through shared memory (distributed/shared_memory_collectives.h) against their
// definition: every rank's values added in rank order, for every dtype and for sizes that are
// multiples of nothing (one element, a slice plus one, several slices and a remainder); the same
// through MPI's messages; all-gathers; collectives started and waited for in different orders on
// different ranks; a rank that never arrives.
#include "distributed/shared_memory_collectives.h"

#include <cstdlib>

#include "tests/support/testing.h"

namespace sg::distributed {
namespace {

using sg::testing::tensors_equal;

// Sizes in elements: empty, tiny, primes, one slice of float32 plus one, several slices.
const std::vector<int64_t> kSizes = {
    0, 1, 3, 1031, SharedMemoryCollectives::kSliceBytes / 4 + 1, 600011};

// The group through MPI's messages alone, made once (every rank makes it in the same test).
std::shared_ptr<ProcessGroup> mpi_group() {
  static std::shared_ptr<ProcessGroup> group = new_group({.shared_memory = false});
  return group;
}

// Rank `rank`'s values of a test: any rank can make any rank's, so each knows the expected sum.
template <typename T>
std::vector<T> values_of(int rank, int64_t n, uint64_t salt) {
  Generator gen(1000003 * static_cast<uint64_t>(rank) + salt);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(gen.next_normal() * 1000.0);
    } else {
      x = static_cast<T>(gen.next_u64());  // the whole int64 range: sums wrap around
    }
  }
  return v;
}

// The definition: in rank order, in T (integers wrapping), then divided by N for an average.
template <typename T>
std::vector<T> expected_sum(int ranks, int64_t n, uint64_t salt, bool average) {
  std::vector<T> sum = values_of<T>(0, n, salt);
  for (int q = 1; q < ranks; ++q) {
    std::vector<T> v = values_of<T>(q, n, salt);
    for (size_t i = 0; i < sum.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        sum[i] += v[i];
      } else {
        sum[i] = static_cast<T>(static_cast<uint64_t>(sum[i]) + static_cast<uint64_t>(v[i]));
      }
    }
  }
  if (average) {
    for (T& x : sum) x /= static_cast<T>(ranks);
  }
  return sum;
}

template <typename T>
void expect_all_reduce_is_the_rank_order_sum(ProcessGroup& group, DType dtype, bool exact) {
  const int ranks = group.world_size();
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average}) {
    if (op == ReduceOp::Average && !std::is_floating_point_v<T>) continue;
    for (int64_t n : kSizes) {
      const uint64_t salt = static_cast<uint64_t>(n) * 31 + static_cast<uint64_t>(op);
      Tensor t = from_vector(values_of<T>(group.rank(), n, salt), {n}).to(dtype);
      group.all_reduce(t, op);
      Tensor expected =
          from_vector(expected_sum<T>(ranks, n, salt, op == ReduceOp::Average), {n}).to(dtype);
      const std::string what =
          fmt::format("{} {} of {} elements over {}", dtype,
                      op == ReduceOp::Sum ? "sum" : "average", n, group.backend_name(kCPU));
      if (exact) {
        EXPECT_TRUE(tensors_equal(t, expected)) << what;
      } else {
        EXPECT_TRUE(sg::testing::tensors_near(t, expected, 1e-5, 1e-3)) << what;
      }
    }
  }
}

TEST(DistributedSharedMemoryTest, AllReduceIsTheSumInRankOrderForEveryDtypeAndSize) {
  auto group = default_group();
  if (group->world_size() > 1) {
    EXPECT_EQ(group->backend_name(kCPU), "shm");
  }
  // Through shared memory each part is summed once, in rank order, by its owner: exact.
  expect_all_reduce_is_the_rank_order_sum<float>(*group, kFloat32, true);
  expect_all_reduce_is_the_rank_order_sum<double>(*group, kFloat64, true);
  expect_all_reduce_is_the_rank_order_sum<int64_t>(*group, kInt64, true);
}

TEST(DistributedSharedMemoryTest, ThroughMpiTheSameSums) {
  auto group = mpi_group();
  EXPECT_EQ(group->backend_name(kCPU), "mpi");
  // MPI adds in an order of its own: exact for two ranks (a + b = b + a), close beyond.
  const bool exact = group->world_size() <= 2;
  expect_all_reduce_is_the_rank_order_sum<float>(*group, kFloat32, exact);
  expect_all_reduce_is_the_rank_order_sum<double>(*group, kFloat64, exact);
  expect_all_reduce_is_the_rank_order_sum<int64_t>(*group, kInt64, true);
}

TEST(DistributedSharedMemoryTest, AllGatherPutsEachRanksInputAtItsPlace) {
  for (auto group : {default_group(), mpi_group()}) {
    const int ranks = group->world_size();
    for (int64_t n : kSizes) {
      for (DType dtype : {kFloat32, kFloat64, kInt64, kBool}) {
        auto mine = values_of<int64_t>(group->rank(), n, 7);
        Tensor input = from_vector(mine, {n}).to(dtype);
        Tensor output = full({ranks * n}, 1.0, TensorOptions(dtype));
        group->all_gather_into(output, input);
        std::vector<Tensor> parts;
        for (int q = 0; q < ranks; ++q)
          parts.push_back(from_vector(values_of<int64_t>(q, n, 7), {n}));
        EXPECT_TRUE(tensors_equal(output, cat(parts).to(dtype)))
            << dtype << " " << n << " over " << group->backend_name(kCPU);
      }
    }
  }
}

TEST(DistributedSharedMemoryTest, AsyncCollectivesFinishWhateverOrderEachRankWaitsIn) {
  auto group = default_group();
  const int n = group->world_size();
  Tensor a = full({300001}, 1.0, TensorOptions(kFloat32));
  Tensor b = full({5}, 2.0, TensorOptions(kFloat64));
  auto first = group->all_reduce_async(a, ReduceOp::Sum);
  auto second = group->all_reduce_async(b, ReduceOp::Sum);
  // Rank 0 waits for the second (which needs the first) and then meets the others at a barrier;
  // the others go to the barrier first: waiting there, they must still do their part of both.
  if (group->rank() == 0) {
    second->wait();
    group->barrier();
    first->wait();
  } else {
    group->barrier();
    first->wait();
    second->wait();
  }
  EXPECT_EQ(a.at<float>({300000}), static_cast<float>(n));
  EXPECT_EQ(b.at<double>({4}), 2.0 * n);

  // A collective dropped without a wait still happens: the next wait of the group finishes it.
  Tensor c = full({1000}, 3.0, TensorOptions(kFloat32));
  group->all_reduce_async(c, ReduceOp::Sum).reset();
  Tensor d = full({1}, 1.0, TensorOptions(kFloat32));
  group->all_reduce(d, ReduceOp::Sum);
  EXPECT_EQ(c.at<float>({999}), 3.0f * static_cast<float>(n));
  EXPECT_EQ(d.item<float>(), static_cast<float>(n));
}

TEST(DistributedSharedMemoryTest, TheEnvironmentTurnsItOff) {
  setenv("SCRATCHGRAD_SHARED_MEMORY", "0", 1);
  auto group = new_group({});
  unsetenv("SCRATCHGRAD_SHARED_MEMORY");
  EXPECT_EQ(group->backend_name(kCPU), "mpi");
  Tensor t = full({3}, 1.0, TensorOptions(kFloat64));
  group->all_reduce(t, ReduceOp::Sum);
  EXPECT_EQ(t.at<double>({2}), group->world_size());
}

TEST(DistributedSharedMemoryTest, RanksThatDisagreeStopTogetherNamingTheVariable) {
  if (default_group()->world_size() < 2) GTEST_SKIP() << "needs 2 ranks (ctest: distributed.np2)";
  // Rank 1 alone turns it off: making the shared window is a collective that rank 1 would skip
  // (the job crashed inside MPI); every rank now refuses, naming the variable.
  if (default_group()->rank() == 1) setenv("SCRATCHGRAD_SHARED_MEMORY", "0", 1);
  EXPECT_SG_ERROR(new_group({}),
                  "init_process_group: rank 0 uses shared memory and rank 1 does not: set "
                  "SCRATCHGRAD_SHARED_MEMORY");
  // A value that is neither 0 nor 1, on one rank: every rank stops, that one with the value.
  setenv("SCRATCHGRAD_SHARED_MEMORY", default_group()->rank() == 1 ? "off" : "1", 1);
  EXPECT_SG_ERROR(new_group({}), default_group()->rank() == 1
                                     ? "SCRATCHGRAD_SHARED_MEMORY must be 0 or 1, got 'off'"
                                     : "SCRATCHGRAD_SHARED_MEMORY must be 0 or 1, and rank 1");
  unsetenv("SCRATCHGRAD_SHARED_MEMORY");
  // The group still works after both refusals.
  Tensor t = full({2}, 1.0, TensorOptions(kFloat64));
  new_group({})->all_reduce(t, ReduceOp::Sum);
  EXPECT_EQ(t.at<double>({1}), default_group()->world_size());
}

TEST(DistributedSharedMemoryTest, ARankThatNeverArrivesIsATimeoutNamingTheCollective) {
  if (default_group()->world_size() < 2) GTEST_SKIP() << "needs 2 ranks (ctest: distributed.np2)";
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  {
    SharedMemoryCollectives shared(comm, std::chrono::milliseconds(300));
    if (default_group()->rank() == 0) {  // the others never take part
      Tensor t = zeros({10});
      auto work = shared.all_reduce(t, ReduceOp::Sum, "all_reduce of the test");
      EXPECT_SG_ERROR(work->wait(),
                      "all_reduce of the test: timed out after 0.3 s waiting for the other ranks");
      // The ranks are out of step now: every later collective of this group fails at once.
      EXPECT_SG_ERROR(shared.all_reduce(t, ReduceOp::Sum, "the next one")->wait(),
                      "the next one: an earlier collective of this group failed");
    }
  }  // every rank frees the shared memory together
  MPI_Comm_free(&comm);
}

}  // namespace
}  // namespace sg::distributed
