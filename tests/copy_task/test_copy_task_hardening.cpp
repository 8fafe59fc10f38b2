// The copy-task program against bad input: configs that parse strictly and stay in bounds,
// checkpoints checked before anything is built from them, runs that are continued or replaced only
// when asked and with the configuration they were started with, and files never half-written.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "autograd/host_memory.h"
#include "config.h"
#include "tests/copy_task/copy_task_testing.h"
#include "tests/support/testing.h"
#include "trainer.h"

namespace copy_task {
namespace {

namespace fs = std::filesystem;
using testing::quick_config;
using testing::quick_options;
using testing::rewrite_metadata;
using testing::temp_dir;

TEST(CopyTaskConfig, ParsesStrictlyAndNamesTheKey) {
  auto with = [](const std::string& key, const std::string& value) {
    auto values = Config::preset_named("tiny").to_map();
    values[key] = value;
    return values;
  };
  EXPECT_SG_ERROR(Config::from_map(with("norm_first", "True")),
                  "'norm_first' = 'True' is not true or false");
  EXPECT_SG_ERROR(Config::from_map(with("layers", "2x")), "'layers' = '2x' is not an integer");
  EXPECT_SG_ERROR(Config::from_map(with("layers", "")), "'layers' = '' is not an integer");
  EXPECT_SG_ERROR(Config::from_map(with("dropout", "0.1 ")), "'dropout' = '0.1 ' is not a number");
  EXPECT_SG_ERROR(Config::from_map(with("seed", "-1")),
                  "'seed' = '-1' is not an integer in [0, 2^64)");
  EXPECT_SG_ERROR(Config::from_map(with("seed", "18446744073709551616")), "'seed'");
  EXPECT_TRUE(Config::from_map(with("norm_first", "true")).norm_first);
  EXPECT_FALSE(Config::from_map(with("norm_first", "false")).norm_first);
  // The whole 64-bit seed range round-trips (2^64 - 1, and 2^63: not an int64).
  Config c = Config::preset_named("tiny");
  c.seed = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(Config::from_map(c.to_map()).seed, c.seed);
  c.seed = uint64_t{1} << 63;
  EXPECT_EQ(Config::from_map(c.to_map()).seed, c.seed);
}

TEST(CopyTaskConfig, RefusesImpossibleSizesAndNonFiniteRates) {
  Config c = Config::preset_named("tiny");
  c.length = 576460752303423489;  // * d_model wraps around 2^64
  EXPECT_SG_ERROR(c.validate(), "length must be in [2, 65536]");
  c = Config::preset_named("tiny");
  c.lr_factor = std::numeric_limits<double>::infinity();
  EXPECT_SG_ERROR(c.validate(), "--lr-factor must be in (0, 1e+30], got inf");
  c.lr_factor = std::nan("");
  EXPECT_SG_ERROR(c.validate(), "--lr-factor must be in (0, 1e+30], got nan");
  c.lr_factor = 0;
  EXPECT_SG_ERROR(c.validate(), "--lr-factor must be in (0, 1e+30], got 0");
  // Each open end, as the flag and a checkpoint have it.
  for (const auto& [set, message] : std::vector<std::pair<void (*)(Config&), std::string>>{
           {[](Config& t) { t.dropout = 1; }, "--dropout must be in [0, 1), got 1"},
           {[](Config& t) { t.beta2 = 1; }, "beta2 (of --preset) must be in [0, 1), got 1"},
           {[](Config& t) { t.eps = 0; }, "eps (of --preset) must be in (0, 1], got 0"}}) {
    c = Config::preset_named("tiny");
    set(c);
    EXPECT_SG_ERROR(c.validate(), message);
  }
  EXPECT_SG_ERROR(Config::from_map(c.to_map()), "checkpoint config 'eps' is 0, not in (0, 1]");
}

TEST(CopyTaskCheckpoint, ConfigIsCheckedAgainstTheTensorsBeforeBuilding) {
  TrainOptions o = quick_options("huge_config");
  train(quick_config(), o);
  const std::string ckpt = o.out_dir + "/model.safetensors", bad = o.out_dir + "/bad.safetensors";
  // Before the fix this built a model of a billion layers (then aborted out of memory).
  // Sizes beyond the flags' bounds are refused as they are read; sizes within them, against the
  // values the file holds.
  rewrite_metadata(ckpt, bad, {{"config.layers", "1000000000"}});
  EXPECT_SG_ERROR(load_checkpoint(bad), "checkpoint config 'layers' is 1000000000, not in [1, 64]");
  rewrite_metadata(ckpt, bad, {{"config.d_ff", "4611686018427387904"}});
  EXPECT_SG_ERROR(load_checkpoint(bad), "'d_ff' is 4611686018427387904, not in [1, 65536]");
  rewrite_metadata(ckpt, bad, {{"config.length", "576460752303423489"}});
  EXPECT_SG_ERROR(load_checkpoint(bad), "'length' is 576460752303423489, not in [2, 65536]");
  rewrite_metadata(ckpt, bad, {{"config.layers", "64"}, {"config.d_ff", "65536"}});
  EXPECT_SG_ERROR(load_checkpoint(bad), "describes a model of at least");
  rewrite_metadata(ckpt, bad, {{"config.norm_first", "True"}});
  EXPECT_SG_ERROR(load_checkpoint(bad), "'norm_first' = 'True' is not true or false");
  rewrite_metadata(o.out_dir + "/last.safetensors", o.out_dir + "/last.safetensors",
                   {{"step", "3x"}});
  o.resume = true;
  EXPECT_SG_ERROR(train(quick_config(), o), "checkpoint metadata 'step' = '3x' is not a valid");
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskCheckpoint, NonFiniteWeightsAreNeverLoaded) {
  TrainOptions o = quick_options("nan_weights");
  train(quick_config(), o);
  for (const char* name : {"model.safetensors", "last.safetensors"}) {
    const std::string path = o.out_dir + "/" + name;
    sg::nn::SafetensorsFile file = sg::nn::load_safetensors(path);
    for (auto& [tensor_name, t] : file.tensors) {
      if (t.dtype() == sg::kFloat32 && t.numel() > 3 && tensor_name.rfind("optimizer.", 0) != 0) {
        t = t.clone();
        t.data_ptr<float>()[3] = std::nanf("");
        break;
      }
    }
    sg::nn::save_safetensors(path, file.tensors, file.metadata);
  }
  EXPECT_SG_ERROR(load_checkpoint(o.out_dir + "/model.safetensors"), "holds infinities or NaNs");
  o.resume = true;  // resuming from NaN weights used to train on to loss nan and exit 0
  EXPECT_SG_ERROR(train(quick_config(), o), "holds infinities or NaNs");
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskTraining, ADivergedRunStopsAndSavesNoBrokenModel) {
  Config c = quick_config();
  c.loop.steps = 40, c.loop.eval_every = 1, c.loop.checkpoint_every = 1, c.warmup = 1;
  c.lr_factor = 1e30;  // finite, but the weights blow up within a few steps
  TrainOptions o = quick_options("diverged");
  try {
    train(c, o);
    ADD_FAILURE() << "a run at lr-factor 1e30 finished";
  } catch (const sg::Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("the training loss is") != std::string::npos ||
                what.find("holds infinities or NaNs; not saving it") != std::string::npos)
        << what;
    EXPECT_NE(what.find("step "), std::string::npos) << what;
  }
  // Whatever was saved before it diverged is finite (load_checkpoint refuses anything else).
  for (const char* name : {"model.safetensors", "last.safetensors"}) {
    if (fs::exists(o.out_dir + "/" + name)) {
      EXPECT_NO_THROW(load_checkpoint(o.out_dir + "/" + name));
    }
  }
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskCheckpoint, AnExistingRunIsReplacedOnlyWhenAsked) {
  TrainOptions o = quick_options("overwrite");
  train(quick_config(), o);
  const std::string before =
      sg::nn::load_safetensors(o.out_dir + "/model.safetensors").metadata.at("history");
  Config other = quick_config();
  other.seed = 5;
  EXPECT_SG_ERROR(train(other, o), "already holds a run");
  EXPECT_EQ(sg::nn::load_safetensors(o.out_dir + "/model.safetensors").metadata.at("history"),
            before);  // untouched
  o.overwrite = true;
  o.resume = true;
  EXPECT_SG_ERROR(train(other, o), "--resume and --overwrite exclude each other");
  o.resume = false;
  train(other, o);
  EXPECT_NE(sg::nn::load_safetensors(o.out_dir + "/model.safetensors").metadata.at("history"),
            before);
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskCheckpoint, LastIsOneFileAndAMismatchedOldPairIsRefused) {
  TrainOptions o = quick_options("pair");
  Config c = quick_config();
  train(c, o);
  const std::string last = o.out_dir + "/last.safetensors";
  sg::nn::SafetensorsFile file = sg::nn::load_safetensors(last);
  // The optimizer's state is in the same file as the model's.
  sg::nn::NamedTensors model, optim;
  for (const auto& [name, t] : file.tensors) {
    (name.rfind("optimizer.", 0) == 0 ? optim : model).emplace_back(name, t);
  }
  ASSERT_FALSE(optim.empty());
  EXPECT_FALSE(fs::exists(o.out_dir + "/last.optim.safetensors"));
  // The older layout, two files, written from different steps (a run killed between the two).
  for (auto& [name, _] : optim) name = name.substr(std::string("optimizer.").size());
  sg::nn::save_safetensors(last, model, file.metadata);
  sg::nn::Metadata old = file.metadata;
  old["step"] = "2";
  sg::nn::save_safetensors(o.out_dir + "/last.optim.safetensors", optim, old);
  o.resume = true;
  c.loop.steps = 6;
  EXPECT_SG_ERROR(train(c, o), "were not written together");
  // A matching old pair resumes, and is replaced by the one file.
  sg::nn::save_safetensors(o.out_dir + "/last.optim.safetensors", optim, file.metadata);
  EXPECT_EQ(train(c, o).steps, 6);
  EXPECT_FALSE(fs::exists(o.out_dir + "/last.optim.safetensors"));
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskCheckpoint, StaleTemporaryFilesOfKilledWritersAreRemoved) {
  TrainOptions o = quick_options("stale");
  train(quick_config(), o);
  const pid_t dead = ::fork();  // a pid that is certainly not running any more
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = fmt::format("{}/last.safetensors.tmp-{}", o.out_dir, dead);
  const std::string alive = fmt::format("{}/model.safetensors.tmp-{}", o.out_dir, ::getppid());
  std::ofstream(stale) << "half a checkpoint";
  std::ofstream(alive) << "being written by a live process";
  o.resume = true;
  Config c = quick_config();
  c.loop.steps = 6;
  train(c, o);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(alive));  // its writer may still finish
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskConfig, SizesHaveUpperBounds) {
  // Before the bounds, --batch 4611686018427387904 overflowed (UBSan) and --layers 1000000
  // allocated for half a minute before bad_alloc.
  Config c = Config::preset_named("tiny");
  c.batch = 4611686018427387904;
  EXPECT_SG_ERROR(c.validate(), "--batch must be in [1, 65536], got 4611686018427387904");
  c = Config::preset_named("tiny");
  c.layers = 1000000;
  EXPECT_SG_ERROR(c.validate(), "--layers must be in [1, 64], got 1000000");
  c = Config::preset_named("tiny");
  c.loop.steps = std::numeric_limits<int64_t>::max();  // what --steps 99999999999999999999 became
  EXPECT_SG_ERROR(c.validate(), "--steps must be in [1, 1000000000]");
  // A checkpoint's config has the same bounds.
  auto values = Config::preset_named("tiny").to_map();
  values["heads"] = "512", values["d_model"] = "512";
  EXPECT_SG_ERROR(Config::from_map(values), "checkpoint config 'heads' is 512, not in [1, 256]");
}

TEST(CopyTaskData, ABatchTooLargeForTheMachineIsRefusedByName) {
  // The batch was built in vectors first: --batch 65536 --length 65536 ended in a bare
  // "std::bad_alloc". Its tensors are made first now, checked against the memory left.
  sg::detail::set_host_memory_for_testing(sg::HostMemory{512ull << 20, "set by the test"});
  TaskGenerator data(Task::Copy, 11, 8192, 8192, 1);
  EXPECT_SG_ERROR(data.next(8192), "empty: an int64 tensor of shape [8192, 8192] needs 512.00 MiB");
  sg::detail::set_host_memory_for_testing(std::nullopt);
  const Batch small = data.next(2);
  EXPECT_EQ(small.src.shape(), (sg::Shape{2, 8192}));
  EXPECT_EQ(small.src.to_vector<int64_t>()[0], kStart);
}

TEST(CopyTaskConfig, EveryKeyHasAFlagAndARuleOnResume) {
  std::set<std::string> keys, with_rule;
  for (const auto& [key, _] : Config::preset_named("tiny").to_map()) keys.insert(key);
  for (const auto& field : Config::fields()) with_rule.insert(field.key);
  keys.erase("preset");  // a name only
  EXPECT_EQ(with_rule, keys);
  EXPECT_EQ(sg::train::flags_that_may_change(Config::fields()),
            "--steps, --eval-every, --checkpoint-every, --eval-samples, --final-samples");
}

TEST(CopyTaskCheckpoint, ResumeRefusesAChangedConfigurationNamingTheFlag) {
  TrainOptions o = quick_options("changed");
  train(quick_config(), o);
  const auto before = fs::last_write_time(o.out_dir + "/last.safetensors");
  o.resume = true;
  // --task reverse used to train the copy model on reverse.
  Config reverse = quick_config();
  reverse.task = "reverse", reverse.loop.steps = 6;
  EXPECT_SG_ERROR(train(reverse, o),
                  "--resume: the checkpoint's configuration differs from the requested one: --task "
                  "is copy in " +
                      o.out_dir + "/last.safetensors, reverse now");
  Config faster = quick_config();
  faster.lr_factor = 2, faster.loop.steps = 6;
  EXPECT_SG_ERROR(train(faster, o), "--lr-factor is 1 in");
  // --bf16 used to switch on or off on --resume, without a word.
  TrainOptions in_bf16 = o;
  in_bf16.bf16 = true;
  Config more = quick_config();
  more.loop.steps = 6;
  EXPECT_SG_ERROR(train(more, in_bf16),
                  "was trained in float32, and this run asks for bfloat16 autocast: a resumed run "
                  "keeps its precision");
  EXPECT_EQ(fs::last_write_time(o.out_dir + "/last.safetensors"), before);
  // What may change: how long, how often.
  Config longer = quick_config();
  longer.loop.steps = 6, longer.loop.eval_every = 3, longer.loop.checkpoint_every = 3,
  longer.eval_samples = 8;
  EXPECT_EQ(train(longer, o).steps, 6);
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskCheckpoint, AnOptimizerStepCountThatIsNotAnIntegerIsRefused) {
  // The step count was read through a double: a float64 2.5, a bool or a NaN became some count,
  // and 0 restarted Adam's bias correction, without a word.
  TrainOptions o = quick_options("step_count");
  train(quick_config(), o);
  const std::string last = o.out_dir + "/last.safetensors";
  const sg::nn::SafetensorsFile good = sg::nn::load_safetensors(last);
  o.resume = true;
  Config c = quick_config();
  c.loop.steps = 6;
  for (const auto& [value, message] : std::vector<std::pair<sg::Tensor, std::string>>{
           {sg::scalar_tensor(2.5, sg::kFloat64), "must be one int64 step count, got float64"},
           {sg::scalar_tensor(1.0, sg::kBool), "must be one int64 step count, got bool"},
           {sg::scalar_tensor(0.0, sg::kInt64), "'step.0' = 0 is not a step count"}}) {
    sg::nn::NamedTensors tensors = good.tensors;
    for (auto& [name, t] : tensors) {
      if (name == "optimizer.step.0") t = value;
    }
    sg::nn::save_safetensors(last, tensors, good.metadata);
    EXPECT_SG_ERROR(train(c, o), "--resume: the optimizer state in " + last + " does not match");
    EXPECT_SG_ERROR(train(c, o), message);
  }
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskCheckpoint, CaptureInitNeverReplacesAnExistingModel) {
  // capture --init --checkpoint RUN/model.safetensors used to overwrite a trained model with fresh
  // weights and exit 0.
  TrainOptions o = quick_options("init");
  train(quick_config(), o);
  const std::string model = o.out_dir + "/model.safetensors";
  std::ifstream in(model, std::ios::binary);
  const std::string before{std::istreambuf_iterator<char>(in), {}};
  EXPECT_SG_ERROR(save_initial_checkpoint(model, quick_config()),
                  "capture --init: " + model + " already exists");
  std::ifstream again(model, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(again), {}), before);
  save_initial_checkpoint(o.out_dir + "/fresh.safetensors", quick_config());
  EXPECT_EQ(load_checkpoint(o.out_dir + "/fresh.safetensors").config.to_map(),
            quick_config().to_map());
  fs::remove_all(o.out_dir);
}

}  // namespace
}  // namespace copy_task
