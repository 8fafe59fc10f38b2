// The copy-task program's library: training reaches 100% exact match, resuming reproduces an
// uninterrupted run, cached decoding equals recomputing the prefix, tasks make the right targets.
// (Bad input and broken files: test_copy_task_hardening.cpp.)
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "autograd/anomaly.h"
#include "config.h"
#include "decoding.h"
#include "tests/copy_task/copy_task_testing.h"
#include "tests/support/testing.h"
#include "trainer.h"

namespace copy_task {
namespace {

namespace fs = std::filesystem;
using testing::quick_config;
using testing::quick_options;
using testing::temp_dir;

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

// The reference setup (post-LN, sinusoidal, no dropout, Adam + Noam warmup 400, batch 80), in
// float32 or with --bf16 (the forward and the loss under autocast; where the CPU has no
// AVX512-BF16 the reference bfloat16 product runs: the same values, more slowly).
void expect_tiny_reaches_full_exact_match(bool bf16) {
  std::string dir = temp_dir(bf16 ? "e2e_bf16" : "e2e");
  Config c = Config::preset_named("tiny");
  c.loop.steps = 1000;
  c.final_samples = 1000;
  TrainOptions o;
  o.out_dir = dir;
  o.quiet = true;
  o.bf16 = bf16;
  o.metrics_json = dir + "/metrics.json";
  TrainSummary s = train(c, o);
  EXPECT_EQ(s.bf16, bf16);
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
  EXPECT_EQ(m.at("precision").get<std::string>(), bf16 ? "bfloat16 autocast" : "float32");
  fs::remove_all(dir);
}

TEST(CopyTaskTraining, TinyReachesFullExactMatch) { expect_tiny_reaches_full_exact_match(false); }

TEST(CopyTaskTraining, TinyReachesFullExactMatchWithBf16) {
  expect_tiny_reaches_full_exact_match(true);
}

TEST(CopyTaskTraining, ResumeReproducesAnUninterruptedRun) {
  Config c = Config::preset_named("tiny");
  c.batch = 16, c.loop.steps = 40, c.loop.eval_every = 10, c.eval_samples = 20,
  c.final_samples = 20;
  c.loop.checkpoint_every = 20;
  c.dropout = 0.1;  // dropout draws from the global generator, which must be restored too
  TrainOptions o;
  o.quiet = true;
  o.out_dir = temp_dir("straight");
  train(c, o);
  std::string straight = o.out_dir;

  o.out_dir = temp_dir("resumed");
  Config first_half = c;
  first_half.loop.steps = 20;
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
  c.batch = 16, c.loop.steps = 40, c.loop.eval_every = 10, c.eval_samples = 20,
  c.final_samples = 20;
  c.loop.checkpoint_every = 20;
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
  for (const char* file : {"log.jsonl", "loss.svg", "accuracy.svg"}) {
    EXPECT_EQ(bytes(every + "/" + file), bytes(seventh + "/" + file)) << file;
  }
  // Checkpoints: every tensor, and every metadata value but the history's wall-clock times.
  for (const char* file : {"model.safetensors", "last.safetensors"}) {
    sg::nn::SafetensorsFile a = sg::nn::load_safetensors(every + "/" + file);
    sg::nn::SafetensorsFile b = sg::nn::load_safetensors(seventh + "/" + file);
    ASSERT_EQ(a.tensors.size(), b.tensors.size()) << file;
    for (size_t i = 0; i < a.tensors.size(); ++i) {
      EXPECT_EQ(a.tensors[i].first, b.tensors[i].first) << file;
      EXPECT_TRUE(sg::testing::tensors_equal(a.tensors[i].second, b.tensors[i].second))
          << file << " " << a.tensors[i].first;
    }
    const auto history = [](sg::nn::Metadata& md) {
      nlohmann::json h = nlohmann::json::parse(md.at("history"));
      md.erase("history");
      return h.at("losses");
    };
    EXPECT_EQ(history(a.metadata), history(b.metadata)) << file;
    EXPECT_EQ(a.metadata, b.metadata) << file;
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

TEST(CopyTaskOptions, Bf16StepsStayCloseToFloat32) {
  // The same run with and without --bf16: the losses differ (the products read bfloat16
  // operands, about 3 significant digits) but stay within 2% of each other over a few steps. This
  // model's products are below autocast's CPU threshold: a threshold of 0 rounds them all the same.
  const sg::AutocastCpuMinProductGuard every_product(0);
  Config c = quick_config();
  c.d_model = 64, c.d_ff = 128, c.batch = 16;
  auto losses = [&](bool bf16) {
    TrainOptions o = quick_options(bf16 ? "bf16" : "f32");
    o.bf16 = bf16;
    train(c, o);
    auto md = sg::nn::load_safetensors(o.out_dir + "/last.safetensors").metadata;
    fs::remove_all(o.out_dir);
    return nlohmann::json::parse(md.at("history")).at("losses").get<std::vector<double>>();
  };
  const std::vector<double> f32 = losses(false), bf16 = losses(true);
  ASSERT_EQ(f32.size(), bf16.size());
  EXPECT_NE(f32, bf16);
  for (size_t i = 0; i < f32.size(); ++i)
    EXPECT_NEAR(bf16[i], f32[i], 0.02 * f32[i]) << "step " << i + 1;
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
  c.batch = 8, c.loop.steps = 5, c.loop.eval_every = 5, c.eval_samples = 4, c.final_samples = 4;
  TrainOptions o;
  o.quiet = true;
  o.out_dir = temp_dir("mismatch");
  train(c, o);
  auto before = fs::last_write_time(o.out_dir + "/last.safetensors");
  Config other = c;
  other.d_model = 64, other.loop.steps = 10;
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

TEST(CopyTaskAnomaly, ABlownUpLearningRateIsCaughtAtTheFirstNonFiniteOp) {
  // lr 1e30: the first Adam step moves every weight by about 1e30; the next forward overflows.
  Config c = quick_config();
  c.lr_factor = 1e30;
  c.warmup = 1;
  c.loop.steps = 3;
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
