// Tests for train/output_paths.cpp: an output never replaces a checkpoint (any run's, not only the
// inputs named), a run's --metrics-json and --log-jsonl never land on its charts.
#include "train/output_paths.h"

#include <filesystem>

#include "nn/linear.h"
#include "nn/safetensors.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"
#include "train/checkpoint.h"

namespace sg::train {
namespace {

namespace fs = std::filesystem;
using sg::testing::TempDir;
using sg::testing::write_bytes;

TEST(TrainOutputPaths, ACheckpointIsKnownByItsHeader) {
  TempDir dir;
  nn::Linear fc(2, 1);
  save_checkpoint(dir / "model.safetensors", fc, nullptr, {{"format", "test-1"}});
  nn::save_safetensors(dir / "state.safetensors", {{"w", ones({2})}}, {{"step", "3"}});
  nn::save_safetensors(dir / "capture.safetensors", {{"w", ones({2})}}, {{"order", "[]"}});
  write_bytes(dir / "notes.json", "{}");
  write_bytes(dir / "short", "abc");
  EXPECT_TRUE(is_checkpoint(dir / "model.safetensors"));
  EXPECT_TRUE(is_checkpoint(dir / "state.safetensors"));
  EXPECT_FALSE(is_checkpoint(dir / "capture.safetensors"));  // a capture may be written again
  EXPECT_FALSE(is_checkpoint(dir / "notes.json"));
  EXPECT_FALSE(is_checkpoint(dir / "short"));
  EXPECT_FALSE(is_checkpoint(dir / "missing"));
}

TEST(TrainOutputPaths, AnOutputNeverReplacesACheckpoint) {
  // Any run's, not only the input named: eval's --metrics-json on another run's last.safetensors
  // made that run unresumable, exit 0.
  TempDir dir;
  nn::Linear fc(2, 1);
  save_checkpoint(dir / "other_last.safetensors", fc, nullptr, {{"format", "test-1"}});
  EXPECT_SG_ERROR(check_replaced_output({"--metrics-json", dir / "other_last.safetensors"},
                                        {{"--checkpoint", dir / "model.safetensors"}}),
                  "--metrics-json " + (dir / "other_last.safetensors") +
                      " is a checkpoint (a trained model or a run's state): an output never "
                      "replaces one");
  EXPECT_NO_THROW(check_replaced_output({"--metrics-json", dir / "metrics.json"}, {}));
  write_bytes(dir / "metrics.json", "{}");  // an earlier output of the same kind: replaced
  EXPECT_NO_THROW(check_replaced_output({"--metrics-json", dir / "metrics.json"}, {}));
}

TEST(TrainOutputPaths, ARunsLogsNeverLandOnItsCharts) {
  TempDir dir;
  EXPECT_SG_ERROR(check_run_outputs(dir / "run", dir / "run/loss.svg", "", {}, {"loss.svg"}),
                  "--metrics-json " + (dir / "run/loss.svg") + " is the run's loss.svg");
  EXPECT_SG_ERROR(check_run_outputs(dir / "run", "", dir / "run/accuracy.svg", {},
                                    {"loss.svg", "accuracy.svg"}),
                  "--log-jsonl " + (dir / "run/accuracy.svg") + " is the run's accuracy.svg");
  EXPECT_NO_THROW(check_run_outputs(dir / "run", dir / "run/metrics.json", dir / "run/log.jsonl",
                                    {}, {"loss.svg"}));
}

}  // namespace
}  // namespace sg::train
