// train/data_parallel_run.h, a program's side of data parallelism: alone, the identity; under
// `mpirun -np 2`, each rank's rows, gradients and losses averaged over the ranks, one dropout
// stream per rank saved and restored, ZeRO-1's shards, and the dropout streams' metadata.
#include "train/data_parallel_run.h"

#include <cstdlib>
#include <string>

#include "distributed/process_group.h"
#include "tests/distributed/small_mlp.h"

namespace sg::train {
namespace {

using namespace sg::testing::small_mlp;
using sg::testing::tensors_equal;

TEST(DataParallelRun, ProcessesMpirunStartedWithoutDistributedAreRefused) {
  // `mpirun -np 3 copy_task train` without --distributed: three whole runs into one --out, one of
  // them failing on the others' files. The launcher's environment says so before any joining.
  const char* size_before = std::getenv("OMPI_COMM_WORLD_SIZE");
  const std::string kept = size_before ? size_before : "";
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  try {
    join_distributed_job_if_asked({});
    ADD_FAILURE() << "no error";
  } catch (const FailsOnEveryRank& e) {
    EXPECT_STREQ(e.what(),
                 "mpirun started 3 processes, but without --distributed each would train a whole "
                 "run alone, into the same --out: add --distributed (or start one process)");
  }
  setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
  EXPECT_NO_THROW(join_distributed_job_if_asked({}));
  if (size_before) {
    setenv("OMPI_COMM_WORLD_SIZE", kept.c_str(), 1);
  } else {
    unsetenv("OMPI_COMM_WORLD_SIZE");
  }
}

TEST(DataParallelRun, AloneEveryCallIsTheIdentity) {
  auto model = make_model(3);
  DataParallelRun alone(model, {});
  EXPECT_EQ(alone.rank(), 0);
  EXPECT_EQ(alone.world_size(), 1);
  EXPECT_TRUE(alone.writes());
  const auto [x, y] = global_batch(0);
  EXPECT_TRUE(tensors_equal(alone.my_rows(x), x));
  EXPECT_TRUE(tensors_equal(alone.mean_over_ranks(y), y));
  EXPECT_NO_THROW(alone.check_splits(7, "--batch"));
  // An error every rank meets alike lets each rank end normally (report_error); others do not.
  EXPECT_TRUE(failed_alike_on_every_rank(FailsOnEveryRank("--batch: a batch of 7")));
  EXPECT_FALSE(failed_alike_on_every_rank(Error("one rank's error")));
  EXPECT_DOUBLE_EQ(alone.per_token_mean(scalar_tensor(12.0, kFloat64), 4).item<double>(), 3.0);
  EXPECT_EQ(alone.gradient_bytes(), 0);
  // A resumed run continues its one dropout stream; a fresh one leaves the generator alone.
  default_generator().manual_seed(5);
  const uint64_t fresh = default_generator().state();
  EXPECT_EQ(alone.start_dropout_streams(22, false, 0, {.global = 77}, true), "");
  EXPECT_EQ(default_generator().state(), fresh);
  EXPECT_EQ(alone.start_dropout_streams(22, true, 10, {.global = 77}, true), "");
  EXPECT_EQ(default_generator().state(), 77u);
  const DropoutStreams saved = alone.dropout_streams();
  EXPECT_EQ(saved.global, 77u);
  EXPECT_TRUE(saved.per_rank.empty());
  // A run of two ranks resumed alone cannot continue both streams: it starts a new one, and says
  // so (it used to go on with rank 0's stream without a word).
  EXPECT_EQ(
      alone.start_dropout_streams(22, true, 10, {.global = 77, .per_rank = {77, 78}}, true),
      "note: the checkpoint holds the dropout streams of 2 ranks, this run has 1: each rank's "
      "dropout starts a new stream at step 10 (training goes on, but does not repeat an "
      "uninterrupted run bit for bit)");
  EXPECT_NE(default_generator().state(), 77u);
  EXPECT_EQ(alone.start_dropout_streams(22, true, 10, {.global = 77, .per_rank = {77, 78}}, false),
            "");
  // Adam's two moments per parameter, float64.
  auto adam = make_adam(model->parameters(), {.lr = 0.01}, /*zero1=*/false);
  model->zero_grad();
  loss_of(*model, global_batch(0)).backward();
  adam->step();
  int64_t numel = 0;
  for (const Tensor& p : model->parameters()) numel += p.numel();
  EXPECT_EQ(alone.optimizer_state_bytes(*adam), (std::vector<int64_t>{2 * numel * 8}));
}

TEST(DataParallelRun, DropoutStreamsInACheckpointsMetadata) {
  nn::Metadata md;
  write_dropout_streams(md, {.global = 7, .per_rank = {}});
  EXPECT_EQ(md.at("global_rng"), "7");
  EXPECT_FALSE(md.contains("rank_rngs"));
  const DropoutStreams two{.global = 7, .per_rank = {7, 18446744073709551615u}};
  write_dropout_streams(md, two);
  const DropoutStreams back = read_dropout_streams(MetadataReader(md, "run/last.safetensors"));
  EXPECT_EQ(back.global, 7u);
  EXPECT_EQ(back.per_rank, two.per_rank);
  md["rank_rngs"] = "[\"7\", \"-1\"]";
  EXPECT_SG_ERROR(read_dropout_streams(MetadataReader(md, "run/last.safetensors")),
                  "run/last.safetensors: checkpoint metadata 'rank_rngs'");
}

TEST(DataParallelRun, EachRankItsRowsAndTheMeanOfEveryGradient) {
  auto group = distributed::default_group();
  const int ranks = group->world_size();
  if (ranks == 1) GTEST_SKIP() << "needs mpirun -np 2";
  if (kBatch % ranks != 0) GTEST_SKIP() << "the batch of " << kBatch << " does not split";
  auto model = make_model(3), whole = make_model(3);
  DataParallelRun run(model, {.distributed = true, .bucket_mb = 1e-4});  // several buckets
  EXPECT_EQ(run.rank(), group->rank());
  EXPECT_EQ(run.world_size(), ranks);
  EXPECT_EQ(run.writes(), group->rank() == 0);
  EXPECT_SG_ERROR(
      run.check_splits(kBatch + 1, "--batch"),
      fmt::format("--batch: a batch of {} does not split evenly over {} ranks", kBatch + 1, ranks));
  const auto batch = global_batch(1);
  const auto mine = shard(batch, group->rank(), ranks);
  EXPECT_TRUE(tensors_equal(run.my_rows(batch.first), mine.first));
  // The gradients after finish_gradient_sync are those of the whole batch in one process.
  loss_of(*model, {run.my_rows(batch.first), run.my_rows(batch.second)}).backward();
  run.finish_gradient_sync();
  loss_of(*whole, batch).backward();
  const auto got = model->parameters(), want = whole->parameters();
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(sg::testing::tensors_near(got[i].grad(), want[i].grad(), 1e-12, 1e-12)) << i;
  }
  EXPECT_GT(run.gradient_bytes(), 0);
  // The mean over ranks of each rank's own number.
  const Tensor mean = run.mean_over_ranks(full({2}, static_cast<double>(group->rank()), kFloat64));
  EXPECT_DOUBLE_EQ(mean.to_vector<double>()[1], (ranks - 1) / 2.0);
}

TEST(DataParallelRun, EachRankItsOwnDropoutStreamSavedAndRestored) {
  auto group = distributed::default_group();
  const int ranks = group->world_size();
  if (ranks == 1) GTEST_SKIP() << "needs mpirun -np 2";
  auto model = make_model(3);
  DataParallelRun run(model, {.distributed = true});
  EXPECT_EQ(run.start_dropout_streams(22, false, 0, {}, true), "");
  const DropoutStreams fresh = run.dropout_streams();
  ASSERT_EQ(fresh.per_rank.size(), static_cast<size_t>(ranks));
  EXPECT_NE(fresh.per_rank[0], fresh.per_rank[1]);  // a stream per rank
  EXPECT_EQ(fresh.per_rank[static_cast<size_t>(group->rank())], fresh.global);
  // A run of as many ranks continues each rank's stream.
  (void)rand({3});  // draw: the stream moves on
  EXPECT_EQ(run.start_dropout_streams(22, true, 40, fresh, true), "");
  EXPECT_EQ(default_generator().state(), fresh.per_rank[static_cast<size_t>(group->rank())]);
  // Saved by another number of ranks: new streams at the step, and a note that says so.
  const DropoutStreams one_rank{.global = fresh.global, .per_rank = {}};
  EXPECT_NE(run.start_dropout_streams(22, true, 40, one_rank, true)
                .find("the checkpoint holds the dropout streams of 1 rank, this run has 2"),
            std::string::npos);
  EXPECT_EQ(run.start_dropout_streams(22, true, 40, one_rank, /*has_dropout=*/false), "");
}

TEST(DataParallelRun, ZeroOneShardsTheStateOverTheRanks) {
  auto group = distributed::default_group();
  const int ranks = group->world_size();
  if (ranks == 1) GTEST_SKIP() << "needs mpirun -np 2";
  auto model = make_model(3);
  DataParallelRun run(model, {.distributed = true});
  auto zero = make_adam(model->parameters(), {.lr = 0.01}, /*zero1=*/true);
  loss_of(*model, {run.my_rows(global_batch(2).first), run.my_rows(global_batch(2).second)})
      .backward();
  run.finish_gradient_sync();
  zero->step();
  int64_t numel = 0;
  for (const Tensor& p : model->parameters()) numel += p.numel();
  const std::vector<int64_t> bytes = run.optimizer_state_bytes(*zero);
  ASSERT_EQ(bytes.size(), static_cast<size_t>(ranks));
  EXPECT_EQ(bytes[0] + bytes[1], 2 * numel * 8);  // each moment once, over the ranks
  EXPECT_LT(bytes[0], 2 * numel * 8);
  run.gather_optimizer_state(*zero);  // collective; rank 0 then holds the whole state
}

}  // namespace
}  // namespace sg::train
