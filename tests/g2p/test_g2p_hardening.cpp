// examples/g2p against bad input: sizes beyond what a checkpoint may hold are refused when parsed,
// dictionary words the model cannot take are found with their file and line before training,
// checkpoints are checked before use, a resumed run keeps its configuration, and pronounce
// decodes in batches and reports a word it cannot spell without losing the others.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "run_state.h"
#include "tests/g2p/g2p_testing.h"
#include "tests/support/testing.h"
#include "train/checkpoint.h"
#include "trainer.h"

namespace {

namespace fs = std::filesystem;

using g2p::testing::fixture;
using g2p::testing::temp_dir;

// A few steps of a tiny model on the dictionary slice.
g2p::Config tiny_config() {
  g2p::Config c;
  c.data = fixture();
  c.d_model = 16, c.heads = 2, c.layers = 1, c.d_ff = 32;
  c.schedule = "noam", c.loop.steps = 6, c.warmup = 4, c.max_tokens = 400;
  c.loop.eval_every = 3, c.dev_words = 8, c.loop.checkpoint_every = 3;
  c.loop.ema = 0, c.loop.average_last = 0;
  return c;
}

TEST(G2pHardening, SizesAreBoundedWhenParsedAsWhenLoaded) {
  // --layers 65 (or --heads 257, --ffn 65537) used to train and write checkpoints that the loader
  // then refused forever: the bounds are now validate()'s, for a command line and a checkpoint.
  for (const auto& [field, value, flag, key, bounds] : std::vector<
           std::tuple<int64_t g2p::Config::*, int64_t, std::string, std::string, std::string>>{
           {&g2p::Config::layers, 65, "--layers", "layers", "[1, 64]"},
           {&g2p::Config::heads, 257, "--heads", "heads", "[1, 256]"},
           {&g2p::Config::d_ff, 65537, "--ffn", "d_ff", "[1, 65536]"},
           {&g2p::Config::d_model, 8192, "--d-model", "d_model", "[1, 4096]"}}) {
    g2p::Config c = tiny_config();
    c.*field = value;
    const std::string v = std::to_string(value);
    EXPECT_SG_ERROR(c.validate(), flag + " must be in " + bounds + ", got " + v);
    EXPECT_SG_ERROR(g2p::Config::from_map(c.to_map()),
                    "g2p: checkpoint config '" + key + "' is " + v + ", not in " + bounds);
  }
  g2p::Config c = tiny_config();
  auto values = c.to_map();
  values["norm_first"] = "True";  // used to be read as false
  EXPECT_SG_ERROR(g2p::Config::from_map(values),
                  "g2p: checkpoint config 'norm_first' = 'True' is not true or false");
  values["norm_first"] = "1";  // as older checkpoints wrote it
  EXPECT_TRUE(g2p::Config::from_map(values).norm_first);
}

TEST(G2pHardening, TheLongestWordTheDataLetsThroughFitsTheSmallestBatch) {
  // --max-tokens 64 used to be accepted, and a dictionary word of 40 letters then stopped
  // training with the loader's "example 9 alone has 82 tokens": the flag's lower bound is now
  // the longest pair load_dataset lets through.
  const g2p::Word longest{.spelling = std::string(g2p::kMaxLetters, 'a'),
                          .pronunciations = {std::vector<std::string>(g2p::kMaxPhonemes, "AH0")}};
  const std::vector<g2p::Word> words{longest};
  auto pairs =
      g2p::training_pairs(words, g2p::letter_vocabulary(words), g2p::phoneme_vocabulary(words));
  EXPECT_NO_THROW(sg::data::BucketLoader(pairs, g2p::Config::kMinTokens, 1));
  EXPECT_SG_ERROR(sg::data::BucketLoader(pairs, g2p::Config::kMinTokens - 1, 1),
                  "alone has 128 tokens");
  g2p::Config c = tiny_config();
  c.max_tokens = g2p::Config::kMinTokens - 1;
  EXPECT_SG_ERROR(c.validate(), "--max-tokens must be in [128, 1000000], got 127");
}

TEST(G2pHardening, EveryConfigKeyHasAFlagAndARuleOnResume) {
  std::set<std::string> keys, with_rule;
  for (const auto& [key, _] : tiny_config().to_map()) keys.insert(key);
  for (const auto& field : g2p::Config::fields()) with_rule.insert(field.key);
  EXPECT_EQ(with_rule, keys);
  EXPECT_EQ(sg::train::flags_that_may_change(g2p::Config::fields()),
            "--steps, --eval-every, --checkpoint-every, --average-last, --dev-words");
}

TEST(G2pHardening, WordsTheModelCannotTakeAreFoundWhenTheDataIsRead) {
  const std::string dir = temp_dir("words");
  std::ifstream in(fixture());
  const std::string slice{std::istreambuf_iterator<char>(in), {}};
  // One non-ASCII word used to stop training at the first save with a raw "invalid UTF-8 byte",
  // and a word of 130 letters mid-run; both are now refused with the file and the line.
  std::ofstream(dir + "/accent.dict") << "good G UH1 D\ncaf\xc3\xa9 K AE0 F EY1\n" << slice;
  EXPECT_SG_ERROR(g2p::load_dataset(dir + "/accent.dict"),
                  "g2p: " + dir + "/accent.dict:2: the word 'caf\xc3\xa9' has the byte 0xc3");
  std::ofstream(dir + "/long.dict") << slice << std::string(130, 'a') << " AH0\n";
  EXPECT_SG_ERROR(g2p::load_dataset(dir + "/long.dict"), "has 130 letters; at most 64 fit");
  std::string phonemes;
  for (int i = 0; i < 70; ++i) phonemes += " AH0";
  std::ofstream(dir + "/many.dict") << "aaa" << phonemes << "\n" << slice;
  EXPECT_SG_ERROR(g2p::load_dataset(dir + "/many.dict"),
                  "many.dict:1: the pronunciation of 'aaa' has 70 phonemes; at most 62");
  // Training stops before it writes anything.
  g2p::Config c = tiny_config();
  c.data = dir + "/accent.dict";
  EXPECT_SG_ERROR(g2p::train(c, {.out_dir = dir + "/run", .quiet = true}), "accent.dict:2");
  EXPECT_FALSE(fs::exists(dir + "/run/last.safetensors"));
  // A FIFO as --data used to block forever.
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  c.data = dir + "/fifo";
  EXPECT_SG_ERROR(g2p::train(c, {.out_dir = dir + "/run", .quiet = true}), "not a regular file");
  fs::remove_all(dir);
}

TEST(G2pHardening, CheckpointsAreCheckedAndResumeKeepsTheConfiguration) {
  const std::string dir = temp_dir("resume");
  const g2p::Config c = tiny_config();
  g2p::train(c, {.out_dir = dir, .quiet = true, .stop_after = 3});
  // A killed writer's temporary file is removed by the next run in the directory.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = fmt::format("{}/last.safetensors.tmp-{}", dir, dead);
  std::ofstream(stale) << "half a checkpoint";
  // A changed configuration is refused, naming the flag and both values.
  g2p::Config other = c;
  other.label_smoothing = 0.2;
  EXPECT_SG_ERROR(g2p::train(other, {.out_dir = dir, .resume = true, .quiet = true}),
                  "--label-smoothing is 0.1 in " + dir + "/last.safetensors, 0.2 now");
  other = c;
  other.d_ff = 64;
  EXPECT_SG_ERROR(g2p::train(other, {.out_dir = dir, .resume = true, .quiet = true}),
                  "--resume: the checkpoint's model differs from the requested one: --ffn is 32");
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_EQ(g2p::train(c, {.out_dir = dir, .resume = true, .quiet = true}).steps, 6);
  // Weights holding a NaN or an infinity are refused by eval and pronounce (load_model).
  sg::nn::SafetensorsFile file = sg::nn::load_safetensors(dir + "/model.safetensors");
  for (auto& [name, t] : file.tensors) {
    if (name == "src_embed.weight") t = t * std::nan("");
  }
  sg::nn::save_safetensors(dir + "/nan.safetensors", file.tensors, file.metadata);
  EXPECT_SG_ERROR(g2p::load_model(dir + "/nan.safetensors"),
                  "tensor 'src_embed.weight' holds infinities or NaNs");
  fs::remove_all(dir);
}

// Reading a checkpoint builds a model whose initial weights the file replaces: that must not
// move the program's random stream, or the final averaging of a resumed run would save another
// generator state than the uninterrupted run, and an extension of it would train differently.
TEST(G2pHardening, ResumingAFinishedRunChangesNothingThatALongerRunWouldSee) {
  g2p::Config c = tiny_config();
  c.loop.average_last = 2;
  const std::string straight = temp_dir("straight"), resumed = temp_dir("finished");
  g2p::train(c, {.out_dir = straight, .quiet = true});
  g2p::train(c, {.out_dir = resumed, .quiet = true});

  sg::manual_seed(123);
  const uint64_t before = sg::default_generator().state();
  g2p::read_checkpoint(resumed + "/last.safetensors");
  g2p::save_average({.run_dir = resumed, .last = 2, .out = resumed + "/mean.safetensors"});
  EXPECT_EQ(sg::default_generator().state(), before) << "reading checkpoints drew numbers";

  // The finished run resumed (no step to train, the average again), then both extended.
  g2p::train(c, {.out_dir = resumed, .resume = true, .quiet = true});
  g2p::Config longer = c;
  longer.loop.steps = 9;
  g2p::train(longer, {.out_dir = straight, .resume = true, .quiet = true});
  g2p::train(longer, {.out_dir = resumed, .resume = true, .quiet = true});
  const sg::nn::SafetensorsFile a = sg::nn::load_safetensors(straight + "/last.safetensors");
  const sg::nn::SafetensorsFile b = sg::nn::load_safetensors(resumed + "/last.safetensors");
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_TRUE(sg::testing::tensors_equal(a.tensors[i].second, b.tensors[i].second))
        << a.tensors[i].first;
  }
  EXPECT_EQ(a.metadata.at("global_rng"), b.metadata.at("global_rng"));
  fs::remove_all(straight);
  fs::remove_all(resumed);
}

TEST(G2pHardening, PronounceDecodesInBatchesAndNamesWhatItCannotSpell) {
  const std::string dir = temp_dir("pronounce");
  g2p::train(tiny_config(), {.out_dir = dir, .quiet = true});
  const g2p::Model m = g2p::load_model(dir + "/model.safetensors");
  const std::vector<std::string> words = {"tensor", "read", "a", "cat", "abbreviate"};
  const auto all = m.pronounce(words, 2);
  // Each word alone (no padding) as in the batch of five (padded to the longest).
  for (size_t i = 0; i < words.size(); ++i) EXPECT_EQ(m.pronounce({words[i]}, 2)[0], all[i]);
  EXPECT_EQ(g2p::unspellable("tensor", m.letters), std::nullopt);
  EXPECT_EQ(g2p::unspellable("r2d2", m.letters).value_or(""),
            "its letter '2' is not in the model's alphabet (training never saw it)");
  EXPECT_NE(g2p::unspellable("caf\xc3\xa9", m.letters).value_or("").find("outside printable ASCII"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
