// examples/g2p: a short training run on the committed dictionary slice (the loss must fall), an
// exact resume (loader position and dropout generator included), and clear errors for bad data.
// (Bad input and broken files beyond that: test_g2p_hardening.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/g2p/g2p_testing.h"
#include "tests/support/testing.h"
#include "trainer.h"

namespace {

namespace fs = std::filesystem;

using g2p::testing::fixture;
using g2p::testing::temp_dir;

g2p::Config small_config() {
  g2p::Config c;
  c.data = fixture();
  c.d_model = 32, c.heads = 2, c.layers = 1, c.d_ff = 64;
  c.dropout = 0.1, c.label_smoothing = 0.0, c.schedule = "noam", c.lr_factor = 1.0;
  c.loop.steps = 200, c.warmup = 40, c.max_tokens = 400;
  c.loop.eval_every = 100, c.dev_words = 0, c.loop.checkpoint_every = 0;
  c.loop.ema = 0, c.loop.average_last = 0;  // the trained weights, as the tests below expect
  return c;
}

double mean(const std::vector<double>& v, size_t first, size_t n) {
  double s = 0;
  for (size_t i = first; i < first + n; ++i) s += v[i];
  return s / static_cast<double>(n);
}

// Trains `c` in `dir` in two runs, stopped after `stop_after` steps and then resumed: the losses
// must be bit for bit those of `whole`, the same config trained in one run.
void expect_exact_resume(const g2p::Config& c, const std::string& dir, int64_t stop_after,
                         const sg::train::FitResult& whole) {
  g2p::train(c, {.out_dir = dir, .quiet = true, .stop_after = stop_after});
  sg::train::FitResult resumed = g2p::train(c, {.out_dir = dir, .resume = true, .quiet = true});
  ASSERT_EQ(resumed.history.losses.size(), whole.history.losses.size());
  for (size_t i = 0; i < whole.history.losses.size(); ++i)
    EXPECT_EQ(resumed.history.losses[i], whole.history.losses[i]) << "step " << i + 1;
}

TEST(G2pTraining, LossFallsOnADictionarySlice) {
  sg::train::TrainerOptions o{.out_dir = temp_dir("train"), .quiet = true};
  sg::train::FitResult s = g2p::train(small_config(), o);
  ASSERT_EQ(s.history.losses.size(), 200u);
  // From ln(vocabulary) ~ 4.2 at the start to well below half of it.
  EXPECT_LT(mean(s.history.losses, 190, 10), 0.6 * mean(s.history.losses, 0, 10));
  for (const char* f : {"model.safetensors", "last.safetensors", "loss.svg", "attention.svg",
                        "dev_error_rates.svg"})
    EXPECT_TRUE(fs::exists(o.out_dir + "/" + f)) << f;
  // The saved model loads and pronounces; its dev error rates are what training reported.
  g2p::Model m = g2p::load_model(o.out_dir + "/model.safetensors");
  auto p = m.pronounce({"tensor", "read"}, 3);
  EXPECT_EQ(p.size(), 2u);
  g2p::Dataset d = g2p::load_dataset(fixture());
  g2p::ErrorRates dev = g2p::evaluate(m, d.dev, 1);
  EXPECT_NEAR(dev.wer, s.best.at("dev_wer"), 1e-12);
  EXPECT_NEAR(dev.per, s.best.at("dev_per"), 1e-12);
  // A word right with stress is right without it.
  EXPECT_LE(dev.wer_without_stress, dev.wer);
  fs::remove_all(o.out_dir);
}

TEST(G2pTraining, ResumeIsExact) {
  g2p::Config c = small_config();
  c.loop.steps = 30, c.loop.eval_every = 15, c.loop.checkpoint_every = 5;
  sg::train::FitResult whole = g2p::train(c, {.out_dir = temp_dir("whole"), .quiet = true});
  const std::string dir = temp_dir("halves");
  expect_exact_resume(c, dir, 17, whole);
  EXPECT_SG_ERROR(g2p::train(c, {.out_dir = dir, .quiet = true}), "--resume");
  g2p::Config fewer = c;
  fewer.train_words = 100;
  EXPECT_SG_ERROR(g2p::train(fewer, {.out_dir = dir, .resume = true, .quiet = true}),
                  "--train-words is 0 in");
  fs::remove_all(dir);
  fs::remove_all(temp_dir("whole"));
}

// The lr the trainer gives the update after `step` completed ones: the library's schedule
// (Config::make_schedule) on the config's base lr.
double lr_at(const g2p::Config& c, int64_t step) {
  sg::Tensor p = sg::zeros({1}).requires_grad_();
  sg::optim::Adam opt({p}, {.lr = c.base_lr()});
  return c.make_schedule(opt)->lr_at(step);
}

TEST(G2pTraining, Schedules) {
  g2p::Config c = small_config();
  // Noam: a linear rise to factor / sqrt(d_model * warmup) at `warmup`, then 1/sqrt(step).
  EXPECT_NEAR(lr_at(c, 40), 1.0 / std::sqrt(32.0 * 40.0), 1e-12);
  EXPECT_NEAR(lr_at(c, 160), lr_at(c, 40) / 2, 1e-12);
  EXPECT_NEAR(lr_at(c, 20), lr_at(c, 40) / 2, 1e-12);
  // Cosine: up to lr at `warmup`, half of it halfway through the decay, 0 at `steps`.
  c.schedule = "cosine", c.lr = 3e-3;
  EXPECT_NEAR(lr_at(c, 20), 1.5e-3, 1e-15);
  EXPECT_NEAR(lr_at(c, 40), 3e-3, 1e-15);
  EXPECT_NEAR(lr_at(c, 120), 1.5e-3, 1e-15);
  EXPECT_NEAR(lr_at(c, 200), 0.0, 1e-15);
  EXPECT_GT(lr_at(c, 100), lr_at(c, 101));
  g2p::Config bad = c;
  bad.lr = 0;
  EXPECT_SG_ERROR(bad.validate(), "--schedule cosine needs --lr > 0");
  bad = c;
  bad.warmup = 200;
  EXPECT_SG_ERROR(bad.validate(), "below --steps");
  bad.schedule = "linear";
  EXPECT_SG_ERROR(bad.validate(), "--schedule must be one of noam, cosine, got 'linear'");
  // A checkpoint written before the schedule and layer order were options: Noam, post-LN.
  std::map<std::string, std::string> old = c.to_map();
  old.erase("schedule"), old.erase("lr"), old.erase("norm_first");
  const g2p::Config read = g2p::Config::from_map(old);
  EXPECT_EQ(read.schedule, "noam");
  EXPECT_EQ(read.lr, 0.0);
  EXPECT_FALSE(read.norm_first);
}

TEST(G2pTraining, CosinePreLnTrainsAndResumes) {
  g2p::Config c = small_config();
  c.schedule = "cosine", c.lr = 3e-3, c.norm_first = true;
  c.loop.steps = 60, c.warmup = 10, c.loop.checkpoint_every = 10;
  sg::train::FitResult whole = g2p::train(c, {.out_dir = temp_dir("cos_whole"), .quiet = true});
  EXPECT_LT(mean(whole.history.losses, 50, 10), 0.8 * mean(whole.history.losses, 0, 10));
  // The schedule and the layer order travel in the checkpoint: a resume continues them exactly.
  const std::string dir = temp_dir("cos_halves");
  expect_exact_resume(c, dir, 30, whole);
  g2p::Model m = g2p::load_model(dir + "/last.safetensors");
  EXPECT_TRUE(m.config.norm_first);
  EXPECT_EQ(m.config.schedule, "cosine");
  EXPECT_DOUBLE_EQ(m.config.lr, 3e-3);
  EXPECT_TRUE(m.transformer->options().norm_first);
  fs::remove_all(dir);
  fs::remove_all(temp_dir("cos_whole"));
}

TEST(G2pData, SplitsByWordAndReportsBadFiles) {
  g2p::Dataset d = g2p::load_dataset(fixture());
  EXPECT_EQ(d.train.size() + d.dev.size() + d.test.size(), 360u);
  for (const auto& w : d.dev) EXPECT_EQ(sg::data::split_of(w.spelling), sg::data::Split::kDev);
  const std::string dir = temp_dir("bad");
  fs::create_directories(dir);
  {
    std::ofstream bad(dir + "/bad.dict");
    bad << "good G UH1 D\nbroken line here\n";
  }
  EXPECT_SG_ERROR(g2p::load_dataset(dir + "/bad.dict"), "bad.dict:2");
  EXPECT_SG_ERROR(g2p::load_dataset(dir + "/missing.dict"), "get_cmudict.sh");
  g2p::Config c = small_config();
  c.heads = 3;
  EXPECT_SG_ERROR(g2p::train(c, {.out_dir = dir, .quiet = true}), "multiple of --heads");
  EXPECT_SG_ERROR(g2p::load_model(dir + "/bad.dict"), "");
  fs::remove_all(dir);
}

TEST(G2pTraining, MovingAverageAndCheckpointAveraging) {
  // --ema: the dev evaluations and model.safetensors hold the moving average, and a resumed run
  // continues it exactly. --average-last 3: the newest three step checkpoints are kept, and their
  // mean is evaluated at the end and written as averaged.safetensors.
  g2p::Config c = small_config();
  c.loop.steps = 60, c.loop.eval_every = 30, c.loop.checkpoint_every = 10;
  c.loop.ema = 0.99, c.loop.average_last = 3;
  const std::string whole_dir = temp_dir("ema_whole");
  sg::train::FitResult whole = g2p::train(c, {.out_dir = whole_dir, .quiet = true});
  EXPECT_EQ(whole.averaged_steps, (std::vector<int64_t>{40, 50, 60}));
  ASSERT_TRUE(fs::exists(whole_dir + "/averaged.safetensors"));
  EXPECT_FALSE(fs::exists(whole_dir + "/checkpoint-30.safetensors"));  // only the newest three
  const auto weights = [](const std::string& path) {
    return sg::nn::load_safetensors(path).metadata.at("weights");
  };
  EXPECT_EQ(weights(whole_dir + "/averaged.safetensors"), "average");
  EXPECT_EQ(weights(whole_dir + "/checkpoint-60.safetensors"), "ema");
  EXPECT_EQ(weights(whole_dir + "/last.safetensors"), "trained");
  const std::string best = weights(whole_dir + "/model.safetensors");
  EXPECT_TRUE(best == "ema" || best == "average") << best;
  // The mean's dev error rates are those of the averaged file, evaluated again.
  g2p::Dataset d = g2p::load_dataset(fixture());
  const g2p::ErrorRates mean_dev =
      g2p::evaluate(g2p::load_model(whole_dir + "/averaged.safetensors"), d.dev, 1);
  EXPECT_NEAR(mean_dev.wer, whole.averaged.at("dev_wer"), 1e-12);
  // Stopped at 25 and resumed: the same losses, and the same average at the end.
  const std::string dir = temp_dir("ema_halves");
  expect_exact_resume(c, dir, 25, whole);
  const auto tensors = [](const std::string& path) {
    return sg::nn::load_safetensors(path).tensors;
  };
  const auto a = tensors(whole_dir + "/averaged.safetensors");
  const auto b = tensors(dir + "/averaged.safetensors");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.to_vector<float>(), b[i].second.to_vector<float>()) << a[i].first;
  }
  fs::remove_all(dir);
  fs::remove_all(whole_dir);
}

TEST(G2pTraining, Bf16TrainsLikeFloat32) {
  // --bf16: the forward and the loss under autocast. The losses differ from float32's (bfloat16
  // products) but the run learns as much. This model's products are below autocast's CPU
  // threshold: a threshold of 0 rounds them all the same.
  const sg::AutocastCpuMinProductGuard every_product(0);
  g2p::Config c = small_config();
  c.loop.steps = 100, c.loop.eval_every = 100;
  sg::train::FitResult f32 = g2p::train(c, {.out_dir = temp_dir("f32"), .quiet = true});
  const std::string bf16_dir = temp_dir("bf16");
  sg::train::FitResult bf16 = g2p::train(c, {.out_dir = bf16_dir, .quiet = true, .bf16 = true});
  ASSERT_EQ(bf16.history.losses.size(), f32.history.losses.size());
  EXPECT_NE(bf16.history.losses, f32.history.losses);
  EXPECT_NEAR(bf16.history.losses.front(), f32.history.losses.front(),
              0.02 * f32.history.losses.front());
  EXPECT_NEAR(mean(bf16.history.losses, 90, 10), mean(f32.history.losses, 90, 10),
              0.1 * mean(f32.history.losses, 90, 10));
  // A resumed run keeps its precision (--bf16 used to switch on or off without a word).
  c.loop.steps = 120;
  EXPECT_SG_ERROR(g2p::train(c, {.out_dir = bf16_dir, .resume = true, .quiet = true}),
                  "was trained in bfloat16 autocast, and this run asks for float32");
  fs::remove_all(temp_dir("f32"));
  fs::remove_all(bf16_dir);
}

}  // namespace
