// The copy task with --distributed, under mpirun -np 2: a resumed run continues exactly as an
// uninterrupted one (each rank's dropout stream included), 2 ranks train as one process with the
// whole batch (padded batches too: the per-token mean is over every rank's tokens), only rank 0
// writes, and --zero1 trains bit for bit as without it, with checkpoints that resume either way.
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <filesystem>

#include "distributed/process_group.h"
#include "tests/support/testing.h"
#include "trainer.h"

namespace copy_task {
namespace {

namespace fs = std::filesystem;

// The same directory on every rank: all ranks are children of the same mpirun.
std::string shared_dir(const std::string& name) {
  auto dir =
      fs::temp_directory_path() / ("sg_copy_task_ddp_" + std::to_string(getppid()) + "_" + name);
  return dir.string();
}

Config small_config() {
  Config c = Config::preset_named("tiny");
  c.batch = 16, c.loop.steps = 40, c.loop.eval_every = 10, c.eval_samples = 20,
  c.final_samples = 20;
  c.loop.checkpoint_every = 20;
  return c;
}

std::vector<double> losses(const std::string& dir) {
  auto md = sg::nn::load_safetensors(dir + "/last.safetensors").metadata;
  return nlohmann::json::parse(md.at("history")).at("losses").get<std::vector<double>>();
}

TEST(DistributedCopyTaskTest, ResumedRunContinuesAsAnUninterruptedOne) {
  auto group = sg::distributed::default_group();
  Config c = small_config();
  TrainOptions o;
  o.quiet = true, o.parallel.distributed = true;
  o.out_dir = shared_dir("straight");
  train(c, o);
  const std::string straight = o.out_dir;

  o.out_dir = shared_dir("resumed");
  Config first_half = c;
  first_half.loop.steps = 20;
  train(first_half, o);
  group->barrier();  // rank 0's checkpoint is on disk before any rank reads it
  o.resume = true;
  train(c, o);
  group->barrier();
  if (group->rank() == 0) {
    std::vector<double> a = losses(straight), b = losses(o.out_dir);
    ASSERT_EQ(a.size(), 40u);
    EXPECT_EQ(a, b);  // bit for bit: weights, optimizer state, data stream all restored
  }
  group->barrier();
  if (group->rank() == 0) fs::remove_all(straight), fs::remove_all(o.out_dir);
}

TEST(DistributedCopyTaskTest, TwoRanksTrainAsOneProcessWithTheWholeBatch) {
  auto group = sg::distributed::default_group();
  Config c = small_config();
  c.loop.steps = 20;
  TrainOptions o;
  o.quiet = true, o.parallel.distributed = true;
  o.out_dir = shared_dir("ranks");
  train(c, o);
  // Each rank also trains alone on the whole batch (no collectives), into a directory of its own.
  TrainOptions alone = o;
  alone.parallel.distributed = false;
  alone.out_dir = shared_dir("alone" + std::to_string(group->rank()));
  train(c, alone);
  group->barrier();
  if (group->rank() == 0) {
    // Only rank 0 wrote: one set of files.
    EXPECT_TRUE(fs::exists(o.out_dir + "/last.safetensors"));
    std::vector<double> a = losses(o.out_dir), b = losses(alone.out_dir);
    ASSERT_EQ(a.size(), b.size());
    // float32: the 2-rank gradient sums 8 rows twice then averages, one process sums 16 rows in
    // one matmul, so the steps differ by rounding (~1e-7 relative) and drift a little over 20 Adam
    // steps; 1e-3 is far below the loss's own step-to-step change.
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-3 * std::abs(b[i])) << i;
  }
  group->barrier();
  fs::remove_all(alone.out_dir);
  if (group->rank() == 0) fs::remove_all(o.out_dir);
}

// Runs `c` straight into `name`, and again in two halves (the second resumed) into `name`_resumed:
// the loss histories of the two, on rank 0 (empty elsewhere).
std::pair<std::vector<double>, std::vector<double>> straight_and_resumed(const Config& c,
                                                                         TrainOptions o,
                                                                         const std::string& name) {
  auto group = sg::distributed::default_group();
  o.out_dir = shared_dir(name);
  train(c, o);
  const std::string straight = o.out_dir;
  o.out_dir = shared_dir(name + "_resumed");
  Config first_half = c;
  first_half.loop.steps = c.loop.steps / 2;
  train(first_half, o);
  group->barrier();
  o.resume = true;
  train(c, o);
  group->barrier();
  std::pair<std::vector<double>, std::vector<double>> histories;
  if (group->rank() == 0) histories = {losses(straight), losses(o.out_dir)};
  group->barrier();
  if (group->rank() == 0) fs::remove_all(straight), fs::remove_all(o.out_dir);
  return histories;
}

TEST(DistributedCopyTaskTest, EachRankHasItsOwnDropoutStreamAndResumesIt) {
  auto group = sg::distributed::default_group();
  Config c = small_config();
  c.dropout = 0.1;
  TrainOptions o;
  o.quiet = true, o.parallel.distributed = true;
  const auto [straight, resumed] = straight_and_resumed(c, o, "dropout");
  if (group->rank() == 0) {
    ASSERT_EQ(straight.size(), 40u);
    EXPECT_EQ(straight, resumed);  // every rank's stream continued where it stopped
  }
  // The streams differ between ranks, and the checkpoint keeps one per rank.
  o.out_dir = shared_dir("streams");
  c.loop.steps = 2;
  train(c, o);
  group->barrier();
  if (group->rank() == 0) {
    auto md = sg::nn::load_safetensors(o.out_dir + "/last.safetensors").metadata;
    auto states = nlohmann::json::parse(md.at("rank_rngs")).get<std::vector<std::string>>();
    ASSERT_EQ(states.size(), static_cast<size_t>(group->world_size()));
    if (states.size() > 1) {
      EXPECT_NE(states[0], states[1]);
    }
    EXPECT_EQ(md.at("global_rng"), states[0]);
    fs::remove_all(o.out_dir);
  }
  group->barrier();
}

TEST(DistributedCopyTaskTest, PaddedBatchesTakeTheMeanOverEveryRanksTokens) {
  auto group = sg::distributed::default_group();
  Config c = small_config();
  c.min_len = 3;  // lengths 3..10: the ranks' rows hold different numbers of tokens
  c.loop.steps = 10;
  TrainOptions o;
  o.quiet = true, o.parallel.distributed = true;
  o.out_dir = shared_dir("padded");
  train(c, o);
  TrainOptions alone = o;
  alone.parallel.distributed = false;
  alone.out_dir = shared_dir("padded_alone" + std::to_string(group->rank()));
  train(c, alone);
  group->barrier();
  if (group->rank() == 0) {
    std::vector<double> a = losses(o.out_dir), b = losses(alone.out_dir);
    ASSERT_EQ(a.size(), b.size());
    // Step 1 is the loss of the same model on the same batch: equal but for float32 rounding
    // (a mean of the ranks' means would be off by about 1e-3 here).
    EXPECT_NEAR(a[0], b[0], 1e-5 * b[0]);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-3 * std::abs(b[i])) << i;
  }
  group->barrier();
  fs::remove_all(alone.out_dir);
  if (group->rank() == 0) fs::remove_all(o.out_dir);
}

TEST(DistributedCopyTaskTest, ZeroOneTrainsBitForBitAsWithoutItAndItsCheckpointsResume) {
  auto group = sg::distributed::default_group();
  Config c = small_config();
  TrainOptions o;
  o.quiet = true, o.parallel.distributed = true;
  o.out_dir = shared_dir("unsharded");
  const TrainSummary unsharded = train(c, o);
  o.zero1 = true;
  o.out_dir = shared_dir("zero1");
  const TrainSummary sharded = train(c, o);
  group->barrier();
  if (group->rank() == 0) {
    EXPECT_EQ(losses(shared_dir("zero1")), losses(shared_dir("unsharded")));
    // Each rank holds its shard's moments: together, once, what every rank held without it.
    ASSERT_EQ(sharded.optimizer_state_bytes.size(), static_cast<size_t>(group->world_size()));
    int64_t total = 0;
    for (int64_t bytes : sharded.optimizer_state_bytes) {
      total += bytes;
      if (group->world_size() > 1) {
        EXPECT_LT(bytes, unsharded.optimizer_state_bytes[0]);
      }
    }
    EXPECT_EQ(total, unsharded.optimizer_state_bytes[0]);
  }
  group->barrier();
  // The checkpoint holds the whole state: a sharded run resumes into the same steps...
  const auto [straight, resumed] = straight_and_resumed(c, o, "zero1_resume");
  if (group->rank() == 0) {
    EXPECT_EQ(straight, resumed);
  }
  // ... and so does an unsharded one from a sharded run's checkpoint.
  TrainOptions plain = o;
  plain.zero1 = false, plain.resume = true;
  plain.out_dir = shared_dir("zero1");
  Config longer = c;
  longer.loop.steps = 50;
  train(longer, plain);
  o.out_dir = shared_dir("unsharded"), o.zero1 = false, o.resume = true;
  train(longer, o);
  group->barrier();
  if (group->rank() == 0) {
    EXPECT_EQ(losses(shared_dir("zero1")), losses(shared_dir("unsharded")));
    fs::remove_all(shared_dir("zero1")), fs::remove_all(shared_dir("unsharded"));
  }
  group->barrier();
}

}  // namespace
}  // namespace copy_task
