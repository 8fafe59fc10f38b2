// examples/g2p/compare_commands.h: the split written as dictionary files that hold the
// dictionary, each word in the split split_of gives it and in the model's order, the test split
// scored against itself perfectly, with no file overwritten unless asked.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <utility>

#include "compare_commands.h"
#include "g2p_data.h"
#include "nn/data/pronouncing_dictionary.h"
#include "tests/g2p/g2p_testing.h"
#include "tests/support/testing.h"
#include "trainer.h"

namespace {

namespace fs = std::filesystem;

using g2p::testing::fixture;
using g2p::testing::temp_dir;
using Phonemes = std::vector<std::string>;

// (word, phonemes) of every pronunciation in the files, sorted: what they hold, in any order.
std::vector<std::pair<std::string, Phonemes>> pronunciations_in(
    const std::vector<std::string>& paths) {
  std::vector<std::pair<std::string, Phonemes>> all;
  for (const std::string& path : paths)
    for (auto& p : sg::data::read_cmudict(path)) all.emplace_back(p.word, std::move(p.phonemes));
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(G2pSplit, FilesHoldTheDictionaryEachWordInItsSplit) {
  const std::string dir = temp_dir("split");
  const auto summaries = g2p::write_split(fixture(), dir, false);
  const g2p::Dataset d = g2p::load_dataset(fixture());
  // The three dictionaries together are the slice, pronunciation for pronunciation.
  EXPECT_EQ(pronunciations_in({dir + "/train.dict", dir + "/dev.dict", dir + "/test.dict"}),
            pronunciations_in({fixture()}));
  const std::vector<std::tuple<std::string, sg::data::Split, const std::vector<g2p::Word>*>>
      splits = {{"train", sg::data::Split::kTrain, &d.train},
                {"dev", sg::data::Split::kDev, &d.dev},
                {"test", sg::data::Split::kTest, &d.test}};
  ASSERT_EQ(summaries.size(), 3u);
  for (size_t s = 0; s < splits.size(); ++s) {
    const auto& [name, split, expected] = splits[s];
    // The words the model uses, in its order, each in the split split_of gives it.
    const std::vector<g2p::Word> words =
        sg::data::read_dictionary_words(dir + "/" + name + ".dict");
    ASSERT_EQ(words.size(), expected->size()) << name;
    std::vector<std::string> spellings;
    for (size_t i = 0; i < words.size(); ++i) {
      EXPECT_EQ(words[i].spelling, (*expected)[i].spelling) << name;
      EXPECT_EQ(words[i].pronunciations, (*expected)[i].pronunciations) << words[i].spelling;
      EXPECT_EQ(sg::data::split_of(words[i].spelling), split) << words[i].spelling;
      spellings.push_back(words[i].spelling);
    }
    EXPECT_EQ(summaries[s].name, name);
    EXPECT_EQ(summaries[s].words, static_cast<int64_t>(words.size()));
    if (name != "train") {
      EXPECT_EQ(lines_of(dir + "/" + name + ".words"), spellings) << name;
    }
  }
  EXPECT_FALSE(d.test.empty());
  // The test split scored against itself: a perfect prediction.
  const sg::data::Comparison c =
      sg::data::compare_predictions(dir + "/test.dict", dir + "/test.dict");
  const g2p::ErrorRates r = sg::data::score_pronunciations(c.words, c.predicted);
  EXPECT_EQ(r.words, static_cast<int64_t>(d.test.size()));
  EXPECT_EQ(r.wer, 0.0);
  EXPECT_EQ(r.per, 0.0);
  fs::remove_all(dir);
}

TEST(G2pSplit, RefusesToOverwriteUnlessAsked) {
  const std::string dir = temp_dir("split_overwrite");
  g2p::write_split(fixture(), dir, false);
  EXPECT_SG_ERROR(g2p::write_split(fixture(), dir, false),
                  dir + "/train.dict exists (give --overwrite to replace it)");
  EXPECT_NO_THROW(g2p::write_split(fixture(), dir, true));
  // One existing file is enough, and nothing is written then.
  const std::string other = temp_dir("split_one_file");
  std::ofstream(other + "/test.words") << "mine\n";
  EXPECT_SG_ERROR(g2p::write_split(fixture(), other, false), other + "/test.words exists");
  EXPECT_FALSE(fs::exists(other + "/train.dict"));
  EXPECT_EQ(lines_of(other + "/test.words"), std::vector<std::string>{"mine"});
  fs::remove_all(dir);
  fs::remove_all(other);
}

}  // namespace
