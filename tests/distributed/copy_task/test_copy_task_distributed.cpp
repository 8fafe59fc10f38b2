// The copy task with --distributed, under mpirun -np 2: a resumed run continues exactly as an
// uninterrupted one, 2 ranks train as one process with the whole batch, only rank 0 writes.
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
  c.batch = 16, c.steps = 40, c.eval_every = 10, c.eval_samples = 20, c.final_samples = 20;
  c.checkpoint_every = 20;
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
  o.quiet = true, o.distributed = true;
  o.out_dir = shared_dir("straight");
  train(c, o);
  const std::string straight = o.out_dir;

  o.out_dir = shared_dir("resumed");
  Config first_half = c;
  first_half.steps = 20;
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
  c.steps = 20;
  TrainOptions o;
  o.quiet = true, o.distributed = true;
  o.out_dir = shared_dir("ranks");
  train(c, o);
  // Each rank also trains alone on the whole batch (no collectives), into a directory of its own.
  TrainOptions alone = o;
  alone.distributed = false;
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

}  // namespace
}  // namespace copy_task
