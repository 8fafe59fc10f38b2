// Tests for train/average_checkpoints.cpp: the mean of checkpoints' weights against PyTorch's
// (summed in float64) and by hand, the optimizer and the moving average left out, integer
// counters as fairseq averages them, and files that do not match or hold NaNs refused by name;
// save_average, the file a program's `average` command writes.
#include "train/average_checkpoints.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "nn/linear.h"
#include "nn/optim/sgd.h"
#include "nn/safetensors.h"
#include "nn/serialize.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/golden.h"
#include "tests/support/testing.h"
#include "train/checkpoint.h"
#include "train/run_directory.h"
#include "train/saved_run_state.h"

namespace sg::train {
namespace {

using sg::testing::bit_identical;
using sg::testing::golden;
using sg::testing::TempDir;
using sg::testing::tensors_near;

TEST(CheckpointAveraging, MatchesPyTorchsMeanSummedInFloat64) {
  TempDir dir;
  const auto& c = golden("nn_averaging", "average_checkpoints");
  std::vector<std::string> paths;
  for (int i = 0; i < 3; ++i) {
    paths.push_back(dir / fmt::format("checkpoint-{}.safetensors", i));
    nn::save_safetensors(paths.back(), {{"w", c.input(fmt::format("w_file{}", i))},
                                        {"b", c.input(fmt::format("b_file{}", i))}});
  }
  const nn::NamedTensors mean = average_checkpoints(paths);
  ASSERT_EQ(mean.size(), 2u);
  EXPECT_EQ(mean[0].first, "w");  // the first file's order
  EXPECT_EQ(mean[0].second.dtype(), kFloat32);
  EXPECT_TRUE(tensors_near(mean[0].second, c.output("w"), 0, 0));
  EXPECT_TRUE(tensors_near(mean[1].second, c.output("b"), 0, 0));
}

TEST(CheckpointAveraging, AveragesTheModelOnlyAndLoadsIntoIt) {
  TempDir dir;
  nn::Linear fc(2, 1);
  optim::SGD opt(fc.parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::ExponentialMovingAverage ema(fc);
  std::vector<std::string> paths;
  const std::vector<std::vector<double>> weights = {{1, 2}, {2, 4}, {0.5, 0}, {4, -8}};
  for (size_t i = 0; i < weights.size(); ++i) {
    {
      NoGradGuard no_grad;
      fc.weight.copy_(from_vector(weights[i], {1, 2}));
      fc.bias.fill_(0.1 * static_cast<double>(i));
    }
    fc.weight.set_grad(ones_like(fc.weight));
    opt.step();  // the optimizer's state changes too; it is not averaged
    ema.update(fc);
    paths.push_back(dir / fmt::format("checkpoint-{}.safetensors", i));
    {
      NoGradGuard no_grad;  // the step moved the weight: put the value back
      fc.weight.copy_(from_vector(weights[i], {1, 2}));
    }
    save_checkpoint(paths.back(), fc, &opt, {{"step", std::to_string(i)}}, &ema);
  }
  const nn::NamedTensors mean = average_checkpoints(paths);
  ASSERT_EQ(mean.size(), 2u);
  nn::Linear averaged(2, 1);
  nn::load(averaged, mean, "the average");
  // (1 + 2 + 0.5 + 4) / 4, (2 + 4 + 0 - 8) / 4; (0 + 0.1 + 0.2 + 0.3) / 4 in float64.
  EXPECT_TRUE(tensors_near(averaged.weight, tensor({{1.875, -0.5}}), 0, 0));
  EXPECT_TRUE(tensors_near(
      averaged.bias,
      tensor({static_cast<float>((0.0 + double{0.1f} + double{0.2f} + double{0.3f}) / 4)}), 0, 0));
  // One file is its own mean; a file given twice counts twice.
  EXPECT_TRUE(bit_identical(average_checkpoints({paths[2]}), read_checkpoint(paths[2]).model));
  const nn::NamedTensors weighted = average_checkpoints({paths[0], paths[0], paths[1]});
  EXPECT_TRUE(tensors_near(weighted[0].second, tensor({{4.0 / 3, 8.0 / 3}}), 1e-7, 0));
}

TEST(CheckpointAveraging, IntegerCountersGetTheFloorOfTheMeanAndBoolsMustAgree) {
  TempDir dir;
  const std::string a = dir / "a.safetensors", b = dir / "b.safetensors";
  const Tensor mask = tensor({1.0, 0.0}).to(kBool);
  nn::save_safetensors(a, {{"count", from_vector<int64_t>({3, -3, 7}, {3})}, {"mask", mask}});
  nn::save_safetensors(b, {{"count", from_vector<int64_t>({4, -4, 7}, {3})}, {"mask", mask}});
  const nn::NamedTensors mean = average_checkpoints({a, b});
  EXPECT_EQ(mean[0].second.dtype(), kInt64);
  EXPECT_EQ(mean[0].second.to_vector<int64_t>(), (std::vector<int64_t>{3, -4, 7}));  // floor
  EXPECT_TRUE(bit_identical({mean[1]}, {{"mask", mask}}));
  nn::save_safetensors(b, {{"count", from_vector<int64_t>({4, -4, 7}, {3})},
                           {"mask", tensor({0.0, 0.0}).to(kBool)}});
  EXPECT_SG_ERROR(average_checkpoints({a, b}), "the bool tensor 'mask' differs between " + a +
                                                   " and " + b + "; only numbers can be averaged");
  const int64_t big = std::numeric_limits<int64_t>::max();
  nn::save_safetensors(a, {{"count", from_vector<int64_t>({big}, {1})}});
  EXPECT_SG_ERROR(average_checkpoints({a, a}), "the sum of the int64 tensor 'count' overflows");
}

TEST(CheckpointAveraging, MismatchedAndNonFiniteFilesAreRefusedByName) {
  TempDir dir;
  const std::string a = dir / "a.safetensors", b = dir / "b.safetensors";
  nn::save_safetensors(a, {{"w", ones({2, 3})}, {"b", ones({3})}});
  EXPECT_SG_ERROR(average_checkpoints({}), "average_checkpoints: no checkpoints given");
  EXPECT_SG_ERROR(average_checkpoints({a, dir / "none.safetensors"}),
                  "checkpoint " + (dir / "none.safetensors") + " does not exist");

  nn::save_safetensors(b, {{"w", ones({2, 3})}});
  EXPECT_SG_ERROR(average_checkpoints({a, b}),
                  "average_checkpoints: " + b + " has no tensor 'b', which " + a + " has");
  nn::save_safetensors(b, {{"w", ones({2, 3})}, {"b", ones({3})}, {"extra", ones({1})}});
  EXPECT_SG_ERROR(average_checkpoints({a, b}),
                  "average_checkpoints: " + b + " has a tensor 'extra' that " + a + " has not");
  nn::save_safetensors(b, {{"w", ones({3, 2})}, {"b", ones({3})}});
  EXPECT_SG_ERROR(
      average_checkpoints({a, b}),
      "average_checkpoints: tensor 'w' is float32 [3, 2] in " + b + " but float32 [2, 3] in " + a);
  nn::save_safetensors(b, {{"w", ones({2, 3}, kFloat64)}, {"b", ones({3})}});
  EXPECT_SG_ERROR(average_checkpoints({a, b}), "tensor 'w' is float64 [2, 3] in");
  nn::save_safetensors(b, {{"w", ones({2, 3})}, {"b", full({3}, std::nan(""))}});
  EXPECT_SG_ERROR(average_checkpoints({a, b}),
                  "checkpoint " + b + ": tensor 'b' holds infinities or NaNs");
  nn::save_safetensors(b, {{"optimizer.step", ones({1}, kInt64)}});
  EXPECT_SG_ERROR(average_checkpoints({b}),
                  "average_checkpoints: " + b + " holds no model tensors");
}

// A step checkpoint of a one-tensor model: its weight, its step, the config key "config.width".
void save_step_file(const std::string& path, double weight, int64_t step,
                    const std::string& width = "2") {
  nn::save_safetensors(path, {{"w", full({2}, weight)}},
                       {{"step", std::to_string(step)}, {"config.width", width}, {"note", path}});
}

TEST(CheckpointAveraging, SaveAverageWritesTheMeanWithTheNewestMetadata) {
  TempDir dir;
  const RunDirectory run(dir.path().string());
  for (int64_t step : {10, 20, 30}) {
    save_step_file(run.step_checkpoint(step), static_cast<double>(step), step);
  }
  EXPECT_EQ(run.newest_step_checkpoints(2),
            (std::vector<std::pair<int64_t, std::string>>{{20, run.step_checkpoint(20)},
                                                          {30, run.step_checkpoint(30)}}));
  EXPECT_EQ(run.newest_step_checkpoints(9).size(), 3u);

  std::vector<std::string> seen;
  const std::string out = dir / "mean.safetensors";
  const nn::Metadata written =
      save_average({.run_dir = dir.path().string(), .last = 2, .out = out}, {"config.width"},
                   [&](const Checkpoint& file) { seen.push_back(file.path); });
  EXPECT_EQ(seen, (std::vector<std::string>{run.step_checkpoint(20), run.step_checkpoint(30)}));
  const nn::SafetensorsFile file = nn::load_safetensors(out);
  EXPECT_TRUE(tensors_near(file.tensors.at(0).second, full({2}, 25.0), 0, 0));
  EXPECT_EQ(file.metadata, written);
  EXPECT_EQ(written.at("note"), run.step_checkpoint(30));  // the newest file's
  EXPECT_EQ(written.at("weights"), "average");
  EXPECT_EQ(written.at("averaged_steps"), "[20, 30]");
  EXPECT_EQ(describe_weights(written), "the mean of the weights at steps [20, 30]");
  EXPECT_EQ(describe_weights({{"weights", "ema"}, {"config.ema", "0.99"}, {"step", "7"}}),
            "the moving average of the weights (decay 0.99), step 7");
  EXPECT_EQ(describe_weights({{"step", "7"}}), "the trained weights, step 7");

  // Named files, in the order given (the newest last).
  save_average(
      {.paths = {run.step_checkpoint(30), run.step_checkpoint(10)}, .out = out, .overwrite = true},
      {});
  EXPECT_EQ(nn::load_safetensors(out).metadata.at("averaged_steps"), "[30, 10]");
}

TEST(CheckpointAveraging, SaveAverageRefusesToOverwriteOrToMixModels) {
  TempDir dir;
  const RunDirectory run(dir.path().string());
  save_step_file(run.step_checkpoint(1), 1, 1);
  save_step_file(run.step_checkpoint(2), 2, 2);
  const std::string out = dir / "mean.safetensors";
  EXPECT_SG_ERROR(save_average({.out = out}, {}),
                  "average: give either checkpoints or a run directory, not neither");
  EXPECT_SG_ERROR(
      save_average({.paths = {run.step_checkpoint(1)}, .run_dir = dir.path().string(), .out = out},
                   {}),
      "not both");
  EXPECT_SG_ERROR(save_average({.run_dir = dir / "empty", .out = out}, {}),
                  "average: " + (dir / "empty") + " has no step checkpoints");
  // A run's file is never replaced without --overwrite, and never by the mean of itself.
  const std::string copy = dir / "copy.safetensors";
  std::filesystem::copy_file(run.step_checkpoint(2), copy);
  EXPECT_SG_ERROR(save_average({.paths = {run.step_checkpoint(1), copy}, .out = copy}, {}),
                  "average: --out " + copy + " exists; add --overwrite to replace it");
  EXPECT_SG_ERROR(
      save_average({.paths = {run.step_checkpoint(1), copy}, .out = copy, .overwrite = true}, {}),
      "is one of the checkpoints averaged; write the mean elsewhere");
  // A step's name is the run's: its next step checkpoint would prune the mean, and the next
  // `average --run` would take it for a step. Refused whether or not the file is there yet.
  for (const int64_t step : {2, 9}) {
    EXPECT_SG_ERROR(
        save_average(
            {.run_dir = dir.path().string(), .out = run.step_checkpoint(step), .overwrite = true},
            {}),
        "average: --out " + run.step_checkpoint(step) +
            " has a step checkpoint's name (checkpoint-<step>.safetensors)");
  }
  EXPECT_FALSE(std::filesystem::exists(run.step_checkpoint(9)));
  EXPECT_EQ(nn::load_safetensors(run.step_checkpoint(2)).metadata.at("step"), "2");
  std::filesystem::remove(copy);
  // A file twice, or a file that is itself a mean, would weigh checkpoints unequally.
  EXPECT_SG_ERROR(
      save_average({.paths = {run.step_checkpoint(1), run.step_checkpoint(1)}, .out = out}, {}),
      "average: " + run.step_checkpoint(1) + " is given twice");
  save_average({.paths = {run.step_checkpoint(1), run.step_checkpoint(2)}, .out = out}, {});
  EXPECT_SG_ERROR(
      save_average({.paths = {out, run.step_checkpoint(2)}, .out = dir / "mean2.safetensors"}, {}),
      "average: " + out + " is itself a mean of checkpoints");
  std::filesystem::remove(out);

  // Files of another model: the keys that must agree are compared with the first file's.
  save_step_file(run.step_checkpoint(3), 3, 3, "4");
  EXPECT_SG_ERROR(save_average({.run_dir = dir.path().string(), .out = out}, {"config.width"}),
                  "average: 'config.width' is '4' in " + run.step_checkpoint(3) + " but '2' in " +
                      run.step_checkpoint(1) + ": only checkpoints of one model can be averaged");
  nn::save_safetensors(run.step_checkpoint(3), {{"w", full({2}, 3.0)}}, {{"step", "3"}});
  EXPECT_SG_ERROR(save_average({.run_dir = dir.path().string(), .out = out}, {"config.width"}),
                  "'config.width' is missing in");
  EXPECT_FALSE(std::filesystem::exists(out));
  // The program's own check of each file comes first.
  EXPECT_SG_ERROR(save_average({.run_dir = dir.path().string(), .out = out}, {},
                               [](const Checkpoint& file) {
                                 SG_CHECK(file.metadata.count("config.width"),
                                          "{}: not one of ours", file.path);
                               }),
                  run.step_checkpoint(3) + ": not one of ours");
}

}  // namespace
}  // namespace sg::train
