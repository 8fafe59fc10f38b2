// The copy-task program's library: training reaches 100% exact match, resuming reproduces an
// uninterrupted run, cached decoding equals recomputing the prefix, tasks make the right targets.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include <nlohmann/json.hpp>

#include "autograd/anomaly.h"
#include "config.h"
#include "decoding.h"
#include "plots.h"
#include "tests/support/testing.h"
#include "trainer.h"

namespace copy_task {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / fmt::format("sg_copy_task_{}_{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

TEST(CopyTaskData, TargetsFollowTheTask) {
  TaskGenerator copy(Task::Copy, 11, 10, 10, 1), rev(Task::Reverse, 11, 4, 10, 1),
      sort(Task::Sort, 11, 10, 10, 1);
  EXPECT_EQ(copy.target_for({1, 5, 3, 9}), (std::vector<int64_t>{1, 5, 3, 9}));
  EXPECT_EQ(rev.target_for({1, 5, 3, 9}), (std::vector<int64_t>{1, 9, 3, 5}));
  EXPECT_EQ(sort.target_for({1, 5, 3, 9}), (std::vector<int64_t>{1, 3, 5, 9}));
  Batch b = rev.next(64);
  std::vector<int64_t> src = b.src.to_vector<int64_t>(), lengths = b.lengths.to_vector<int64_t>();
  bool some_padding = false;
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_EQ(src[i * 10], kStart);
    EXPECT_GE(lengths[i], 4);
    for (int64_t t = 0; t < 10; ++t) {
      EXPECT_EQ(src[i * 10 + t] == kPad, t >= lengths[i]);  // padding exactly after the end
      some_padding = some_padding || src[i * 10 + t] == kPad;
    }
  }
  EXPECT_TRUE(some_padding);
}

TEST(CopyTaskDecoding, CachedEqualsRecomputed) {
  // An untrained model makes arbitrary but deterministic choices: any cache bug changes them.
  for (bool norm_first : {false, true}) {
    Config c = Config::preset_named("tiny");
    c.norm_first = norm_first;
    c.positional = norm_first ? "learned" : "sinusoidal";
    sg::manual_seed(7);
    sg::nn::Transformer model(c.model_options());
    model.eval();
    TaskGenerator gen(Task::Copy, c.vocab, 4, c.length, 3);  // padded sources too
    Batch b = gen.next(16);
    auto cached = greedy_decode(model, b.src, c.length, true);
    auto full = greedy_decode(model, b.src, c.length, false);
    EXPECT_EQ(cached, full) << "norm_first=" << norm_first;
  }
}

TEST(CopyTaskTraining, TinyReachesFullExactMatch) {
  // The reference setup (post-LN, sinusoidal, no dropout, Adam + Noam warmup 400, batch 80).
  std::string dir = temp_dir("e2e");
  Config c = Config::preset_named("tiny");
  c.steps = 1000;
  c.final_samples = 1000;
  TrainOptions o;
  o.out_dir = dir;
  o.quiet = true;
  o.metrics_json = dir + "/metrics.json";
  TrainSummary s = train(c, o);
  EXPECT_EQ(s.final_eval.samples, 1000);
  EXPECT_EQ(s.final_eval.exact_match, 1.0)
      << "first perfect step " << s.first_perfect_step.value_or(-1);
  ASSERT_TRUE(s.first_perfect_step.has_value());
  EXPECT_LE(*s.first_perfect_step, 1000);
  EXPECT_TRUE(fs::exists(dir + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(dir + "/loss.svg"));
  std::ifstream in(dir + "/metrics.json");
  nlohmann::json m = nlohmann::json::parse(in);  // throws if the file does not parse
  for (const char* key : {"config", "steps", "final_loss", "exact_match", "token_accuracy",
                          "train_seconds", "median_ms_per_step"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_EQ(m.at("exact_match").get<double>(), 1.0);
  EXPECT_EQ(m.at("steps").get<int64_t>(), 1000);
  EXPECT_EQ(m.at("config").at("d_model").get<std::string>(), "32");
  fs::remove_all(dir);
}

TEST(CopyTaskTraining, ResumeReproducesAnUninterruptedRun) {
  Config c = Config::preset_named("tiny");
  c.batch = 16, c.steps = 40, c.eval_every = 10, c.eval_samples = 20, c.final_samples = 20;
  c.checkpoint_every = 20;
  c.dropout = 0.1;  // dropout draws from the global generator, which must be restored too
  TrainOptions o;
  o.quiet = true;
  o.out_dir = temp_dir("straight");
  train(c, o);
  std::string straight = o.out_dir;

  o.out_dir = temp_dir("resumed");
  Config first_half = c;
  first_half.steps = 20;
  train(first_half, o);
  o.resume = true;
  train(c, o);

  auto losses = [](const std::string& dir) {
    auto md = sg::nn::load_safetensors(dir + "/last.safetensors").metadata;
    return nlohmann::json::parse(md.at("history")).at("losses").get<std::vector<double>>();
  };
  std::vector<double> a = losses(straight), b = losses(o.out_dir);
  ASSERT_EQ(a.size(), 40u);
  EXPECT_EQ(a, b);  // bit for bit: weights, optimizer, data and dropout streams all restored
  fs::remove_all(straight);
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskTraining, SyncEveryChangesNoValue) {
  // Reading the loss and accuracy back every 7 steps instead of every step: the same history,
  // metrics, log lines and checkpoints, byte for byte. 7 divides neither eval_every nor
  // checkpoint_every, so windows are cut short by evaluations and checkpoints too.
  Config c = Config::preset_named("tiny");
  c.batch = 16, c.steps = 40, c.eval_every = 10, c.eval_samples = 20, c.final_samples = 20;
  c.checkpoint_every = 20;
  c.dropout = 0.1;
  auto run = [&](int64_t sync_every) {
    TrainOptions o;
    o.quiet = true;
    o.sync_every = sync_every;
    o.out_dir = temp_dir(fmt::format("sync{}", sync_every));
    o.metrics_json = o.out_dir + "/metrics.json";
    o.log_jsonl = o.out_dir + "/log.jsonl";
    TrainSummary s = train(c, o);
    EXPECT_EQ(s.steps, 40);
    EXPECT_GT(s.median_ms_per_step, 0);
    return o.out_dir;
  };
  std::string every = run(1), seventh = run(7);
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << path;
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  for (const char* file :
       {"model.safetensors", "last.safetensors", "log.jsonl", "loss.svg", "accuracy.svg"}) {
    EXPECT_EQ(bytes(every + "/" + file), bytes(seventh + "/" + file)) << file;
  }
  nlohmann::json a = nlohmann::json::parse(bytes(every + "/metrics.json"));
  nlohmann::json b = nlohmann::json::parse(bytes(seventh + "/metrics.json"));
  for (nlohmann::json* m : {&a, &b}) {  // wall-clock times: the only values that may differ
    m->erase("train_seconds");
    m->erase("median_ms_per_step");
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.at("final_loss").get<double>(), b.at("final_loss").get<double>());
  auto md = sg::nn::load_safetensors(seventh + "/last.safetensors").metadata;
  EXPECT_EQ(nlohmann::json::parse(md.at("history")).at("losses").size(), 40u);
  fs::remove_all(every);
  fs::remove_all(seventh);
}

TEST(CopyTaskOptions, SyncEveryMustBePositive) {
  Config c = Config::preset_named("tiny");
  TrainOptions o;
  o.quiet = true;
  o.out_dir = temp_dir("sync0");
  o.sync_every = 0;
  EXPECT_SG_ERROR(train(c, o), "--sync-every must be at least 1, got 0");
  EXPECT_FALSE(fs::exists(o.out_dir + "/last.safetensors"));
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskCheckpoint, MismatchedResumeChangesNothing) {
  Config c = Config::preset_named("tiny");
  c.batch = 8, c.steps = 5, c.eval_every = 5, c.eval_samples = 4, c.final_samples = 4;
  TrainOptions o;
  o.quiet = true;
  o.out_dir = temp_dir("mismatch");
  train(c, o);
  auto before = fs::last_write_time(o.out_dir + "/last.safetensors");
  Config other = c;
  other.d_model = 64, other.steps = 10;
  o.resume = true;
  EXPECT_SG_ERROR(train(other, o), "--resume: the checkpoint's model");
  EXPECT_EQ(fs::last_write_time(o.out_dir + "/last.safetensors"), before);
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskConfig, ValidatesAndRoundTrips) {
  Config c = Config::preset_named("medium");
  EXPECT_EQ(c.length, 64);
  EXPECT_EQ(Config::from_map(c.to_map()).to_map(), c.to_map());
  c.d_model = 30;
  EXPECT_SG_ERROR(c.validate(), "d_model 30 is not divisible by heads 8");
  EXPECT_SG_ERROR(Config::preset_named("huge"), "unknown preset 'huge'");
}

// ---- Hardening: each item of issue 19 that concerns the copy task ----

// A quick run (a few steps of the tiny model) in a fresh directory.
Config quick_config() {
  Config c = Config::preset_named("tiny");
  c.batch = 8, c.steps = 4, c.eval_every = 2, c.eval_samples = 4, c.final_samples = 4;
  c.checkpoint_every = 2;
  return c;
}

TrainOptions quick_options(const std::string& name) {
  TrainOptions o;
  o.quiet = true;
  o.out_dir = temp_dir(name);
  return o;
}

// A copy of checkpoint `from` at `to` with some metadata changed (tensors as they were).
void rewrite_metadata(const std::string& from, const std::string& to,
                      const std::map<std::string, std::string>& changes) {
  sg::nn::SafetensorsFile file = sg::nn::load_safetensors(from);
  for (const auto& [k, v] : changes) file.metadata[k] = v;
  sg::nn::save_safetensors(to, file.tensors, file.metadata);
}

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
  EXPECT_SG_ERROR(Config::from_map(with("seed", "-1")), "'seed' = '-1' is not a seed");
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
  EXPECT_SG_ERROR(c.validate(), "lr-factor must be positive and finite, got inf");
  c.lr_factor = std::nan("");
  EXPECT_SG_ERROR(c.validate(), "lr-factor must be positive and finite");
}

TEST(CopyTaskCheckpoint, ConfigIsCheckedAgainstTheTensorsBeforeBuilding) {
  TrainOptions o = quick_options("huge_config");
  train(quick_config(), o);
  const std::string ckpt = o.out_dir + "/model.safetensors", bad = o.out_dir + "/bad.safetensors";
  // Before the fix this built a model of a billion layers (then aborted out of memory).
  rewrite_metadata(ckpt, bad, {{"config.layers", "1000000000"}});
  EXPECT_SG_ERROR(load_checkpoint(bad), "describes a model of at least");
  rewrite_metadata(ckpt, bad, {{"config.d_ff", "4611686018427387904"}});  // the count saturates
  EXPECT_SG_ERROR(load_checkpoint(bad), "describes a model of at least");
  rewrite_metadata(ckpt, bad, {{"config.length", "576460752303423489"}});
  EXPECT_SG_ERROR(load_checkpoint(bad), "length must be in [2, 65536]");
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
  c.steps = 40, c.eval_every = 1, c.checkpoint_every = 1, c.warmup = 1;
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
  c.steps = 6;
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
  c.steps = 6;
  train(c, o);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(alive));  // its writer may still finish
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskCheckpoint, AFailedWriteSaysWhyAndLeavesNoTemporaryFile) {
  // A file size limit stands in for a full disk: writes past it fail with EFBIG.
  const std::string dir = temp_dir("full");
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);  // or the kernel would kill the process
  struct rlimit small = old;
  small.rlim_cur = 1000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string what;
  try {
    sg::examples::write_file_atomically(dir + "/metrics.json", std::string(5000, 'x'));
  } catch (const sg::Error& e) {
    what = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_NE(what.find("File too large"), std::string::npos) << what;
  EXPECT_TRUE(fs::is_empty(dir)) << "a temporary file was left behind";
  fs::remove_all(dir);
}

TEST(CopyTaskAnomaly, ABlownUpLearningRateIsCaughtAtTheFirstNonFiniteOp) {
  // lr 1e30: the first Adam step moves every weight by about 1e30; the next forward overflows.
  Config c = quick_config();
  c.lr_factor = 1e30;
  c.warmup = 1;
  c.steps = 3;
  TrainOptions plain = quick_options("lr_plain");
  // Without anomaly mode the trainer notices only the loss, after the step.
  EXPECT_SG_ERROR(train(c, plain), "the training loss is");
  TrainOptions o = quick_options("lr_anomaly");
  std::string message;
  {
    sg::DetectAnomalyGuard anomaly;
    try {
      train(c, o);
    } catch (const sg::Error& e) {
      message = e.what();
    }
  }
  // A forward op of step 2, in the model's code (a module's line), with its inputs.
  EXPECT_NE(message.find("anomaly: '"), std::string::npos) << message;
  EXPECT_NE(message.find("produced"), std::string::npos) << message;
  EXPECT_NE(message.find("nn/", message.find("called at ")), std::string::npos) << message;
  fs::remove_all(plain.out_dir);
  fs::remove_all(o.out_dir);
}

TEST(CopyTaskDecoding, StepLogProbsExplainTheTokens) {
  // decode --print-logits: each step's log-probabilities sum (as probabilities) to 1, the chosen
  // token is the most probable non-padding one, and the cached decode gives the same numbers.
  Config c = Config::preset_named("tiny");
  sg::manual_seed(5);
  sg::nn::Transformer model(c.model_options());
  model.eval();
  TaskGenerator gen(Task::Copy, c.vocab, c.length, c.length, 11);
  Batch b = gen.next(3);
  StepLogProbs cached, full;
  auto tokens = greedy_decode(model, b.src, c.length, true, &cached);
  greedy_decode(model, b.src, c.length, false, &full);
  ASSERT_EQ(cached.size(), 3u);
  for (size_t row = 0; row < cached.size(); ++row) {
    ASSERT_EQ(cached[row].size(), static_cast<size_t>(c.length - 1));
    for (size_t t = 0; t < cached[row].size(); ++t) {
      const std::vector<double>& lp = cached[row][t];
      ASSERT_EQ(lp.size(), static_cast<size_t>(c.vocab));
      double total = 0;
      for (double v : lp) total += std::exp(v);
      EXPECT_NEAR(total, 1.0, 1e-5);
      const auto best = std::max_element(lp.begin() + 1, lp.end()) - lp.begin();
      EXPECT_EQ(tokens[row][t + 1], best);
      for (size_t v = 0; v < lp.size(); ++v) EXPECT_NEAR(lp[v], full[row][t][v], 1e-4);
    }
  }
}

}  // namespace
}  // namespace copy_task
