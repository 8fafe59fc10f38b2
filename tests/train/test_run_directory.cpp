// Tests for train/run_directory.cpp: an existing run is continued or replaced only when asked,
// temporary files of killed writers go and those of live ones stay, last.safetensors is one file,
// and an older version's two files resume only when written together.
#include "train/run_directory.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "nn/linear.h"
#include "nn/optim/sgd.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"

namespace sg::train {
namespace {

namespace fs = std::filesystem;
using sg::testing::TempDir;
using sg::testing::write_bytes;

TEST(TrainRunDirectory, OneProcessAtATimeTrainsInADirectory) {
  // Two runs started into one new directory both ended well, the later one's checkpoints silently
  // replaced by the other's. The lock goes with its holder (and with a killed process).
  TempDir dir;
  RunDirectory run(dir / "run");
  {
    const RunLock held = run.lock();
    EXPECT_TRUE(fs::is_directory(dir / "run"));
    EXPECT_SG_ERROR(static_cast<void>(run.lock()),
                    fmt::format("--out {}: another process (pid {}) is training in "
                                "this directory",
                                dir / "run", ::getpid()));
    const pid_t child = ::fork();  // another process
    if (child == 0) {
      bool refused = false;
      try {
        const RunLock second = RunDirectory(dir / "run").lock();
      } catch (const sg::Error&) {
        refused = true;
      }
      ::_exit(refused ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_NO_THROW({ const RunLock again = run.lock(); });  // released with its holder
  write_bytes(dir / "file", "x");
  EXPECT_SG_ERROR(static_cast<void>(RunDirectory(dir / "file").lock()),
                  "exists and is not a directory");
  // A resume that finds no run leaves no empty directory behind.
  EXPECT_SG_ERROR(static_cast<void>(RunDirectory(dir / "absent").lock(/*resume=*/true)),
                  "--resume: no checkpoint at " + (dir / "absent/last.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "absent"));
  // Links that lead nowhere are named as such (the messages were the file system's own).
  fs::create_symlink(dir / "loop", dir / "loop");
  EXPECT_SG_ERROR(static_cast<void>(RunDirectory(dir / "loop").lock()),
                  "--out " + (dir / "loop") + ": Too many levels of symbolic links");
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  EXPECT_SG_ERROR(static_cast<void>(RunDirectory(dir / "dangling").lock()),
                  "--out " + (dir / "dangling") + " is a link to " + (dir / "nowhere") +
                      ", which does not exist");
}

TEST(TrainRunDirectory, AnExistingRunIsContinuedOrReplacedOnlyWhenAsked) {
  TempDir dir;
  RunDirectory run(dir / "run");
  run.prepare(/*resume=*/false, /*overwrite=*/false);  // creates it
  EXPECT_TRUE(fs::is_directory(dir / "run"));
  nn::Linear fc(2, 1);
  optim::SGD opt(fc.parameters(), {.lr = 0.1, .momentum = 0.9});
  run.save_last(fc, opt, {{"step", "0"}});
  EXPECT_SG_ERROR(run.prepare(false, false),
                  "already holds a run (" + run.last() +
                      "): pass --resume to continue it or --overwrite to start over");
  EXPECT_TRUE(fs::exists(run.last()));
  EXPECT_SG_ERROR(run.prepare(true, true), "--resume and --overwrite exclude each other");
  EXPECT_NO_THROW(run.prepare(true, false));
  EXPECT_TRUE(fs::exists(run.last()));
  write_bytes(dir / "run/loss.svg", "<svg/>");
  write_bytes(dir / "run/mine.txt", "x");
  fs::create_directory(dir / "run/chart.svg");  // not a file: left alone
  EXPECT_SG_ERROR(run.prepare(false, false, {"loss.svg"}), "already holds a run");
  EXPECT_TRUE(fs::exists(dir / "run/loss.svg"));  // a refusal removes nothing
  run.prepare(false, /*overwrite=*/true, {"loss.svg", "chart.svg", "absent.svg"});
  EXPECT_FALSE(fs::exists(run.last()));
  EXPECT_FALSE(fs::exists(dir / "run/loss.svg"));
  EXPECT_TRUE(fs::exists(dir / "run/mine.txt") && fs::is_directory(dir / "run/chart.svg"));
  EXPECT_SG_ERROR(run.prepare(false, false, {"../x.svg"}),
                  "RunDirectory::prepare: output '../x.svg' is not a file name");
  EXPECT_SG_ERROR(run.read_last(), "--resume: no checkpoint at " + run.last());
  write_bytes(dir / "file", "x");
  EXPECT_SG_ERROR(RunDirectory(dir / "file").prepare(false, false),
                  "--out " + (dir / "file") + " exists and is not a directory");
  // A resume of nothing is refused before any directory is made.
  EXPECT_SG_ERROR(RunDirectory(dir / "none").prepare(true, false), "--resume: no checkpoint at");
  EXPECT_FALSE(fs::exists(dir / "none"));
  EXPECT_SG_ERROR(RunDirectory(dir / "file/run").prepare(false, false),
                  "--out " + (dir / "file/run") + ": cannot create the directory");
}

TEST(TrainRunDirectory, StaleTemporaryFilesOfKilledWritersAreRemoved) {
  TempDir dir;
  const pid_t dead = ::fork();  // a pid that is certainly not running any more
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = dir / fmt::format("last.safetensors.tmp-{}", dead);
  const std::string alive = dir / fmt::format("model.safetensors.tmp-{}", ::getppid());
  const std::string other = dir / "notes.tmp-abc";
  write_bytes(stale, "half a checkpoint");
  write_bytes(alive, "being written by a live process");
  write_bytes(other, "not ours");
  RunDirectory(dir.path().string()).prepare(/*resume=*/false, false);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(alive));  // its writer may still finish
  EXPECT_TRUE(fs::exists(other));
}

TEST(TrainRunDirectory, AnOlderVersionsPairResumesOnlyFromOneStep) {
  TempDir dir;
  RunDirectory run(dir.path().string());
  nn::Linear fc(2, 1);
  optim::SGD opt(fc.parameters(), {.lr = 0.1, .momentum = 0.9});
  fc.weight.set_grad(ones_like(fc.weight));
  opt.step();
  // The older layout: the model in last.safetensors, the optimizer in last.optim.safetensors.
  save_checkpoint(run.last(), fc, nullptr, {{"step", "3"}});
  nn::save_safetensors(run.legacy_optimizer(), opt.state(), {{"step", "2"}});
  EXPECT_SG_ERROR(run.read_last(), "were not written together");
  nn::save_safetensors(run.legacy_optimizer(), opt.state(), {{"step", "3"}});
  const Checkpoint c = run.read_last();
  EXPECT_EQ(c.optimizer_path, run.legacy_optimizer());
  EXPECT_EQ(c.optimizer.size(), opt.state().size());
  // Saving writes one file and removes the older one.
  run.save_last(fc, opt, {{"step", "4"}});
  EXPECT_FALSE(fs::exists(run.legacy_optimizer()));
  EXPECT_EQ(run.read_last().optimizer_path, run.last());
  save_checkpoint(run.last(), fc, nullptr, {{"step", "4"}});
  EXPECT_SG_ERROR(run.read_last(), "--resume: " + run.last() + " holds no optimizer state");
}

TEST(TrainRunDirectory, StepCheckpointsKeepTheNewestAndBelongToTheRun) {
  TempDir dir;
  RunDirectory run(dir / "run");
  run.prepare(false, false);
  nn::Linear fc(2, 1);
  optim::SGD opt(fc.parameters(), {.lr = 0.1});
  EXPECT_TRUE(run.step_checkpoints().empty());
  for (int64_t step : {5, 10, 15, 20}) run.save_step(step, fc, {{"step", std::to_string(step)}}, 3);
  // Numeric order (checkpoint-5 before checkpoint-10); the oldest beyond 3 removed.
  auto steps = run.step_checkpoints();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].first, 10);
  EXPECT_EQ(steps[0].second, run.step_checkpoint(10));
  EXPECT_EQ(steps[2].first, 20);
  EXPECT_FALSE(fs::exists(run.step_checkpoint(5)));
  EXPECT_EQ(read_checkpoint(run.step_checkpoint(20)).metadata.at("step"), "20");
  EXPECT_TRUE(read_checkpoint(run.step_checkpoint(20)).optimizer.empty());  // the model only
  // Names that step_checkpoint does not write are someone else's.
  write_bytes(dir / "run/checkpoint-007.safetensors", "x");
  write_bytes(dir / "run/checkpoint-x.safetensors", "x");
  EXPECT_EQ(run.step_checkpoints().size(), 3u);
  run.remove_steps_after(10);
  steps = run.step_checkpoints();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].first, 10);
  // They are part of the run: refused without --resume, removed by --overwrite with the average.
  EXPECT_SG_ERROR(run.prepare(false, false),
                  "already holds a run (" + run.step_checkpoint(10) + ")");
  write_bytes(run.averaged(), "x");
  run.prepare(false, true);
  EXPECT_TRUE(run.step_checkpoints().empty());
  EXPECT_FALSE(fs::exists(run.averaged()));
  EXPECT_TRUE(fs::exists(dir / "run/checkpoint-007.safetensors"));
  EXPECT_SG_ERROR(run.save_step(1, fc, {}, 0), "keep must be >= 1, got 0");
  EXPECT_SG_ERROR(run.step_checkpoint(-1), "step must be >= 0, got -1");
  // save_last carries a moving average when given one.
  optim::ExponentialMovingAverage ema(fc, {.decay = 0.5});
  run.save_last(fc, opt, {{"step", "0"}}, &ema);
  EXPECT_EQ(run.read_last().ema.size(), 4u);  // num_updates, decay, weight, bias
}

}  // namespace
}  // namespace sg::train
