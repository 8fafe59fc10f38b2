// examples/g2p/scoring.h: another system's predictions scored as `g2p eval` scores the model
// (values computed by hand; Phonetisaurus' g2pfst format; missing and extra words; bad files named
// with the line), and the split written as dictionary files that hold the dictionary, each word in
// the split split_of gives it, with no file overwritten unless asked.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <utility>

#include "scoring.h"
#include "tests/g2p/g2p_testing.h"
#include "tests/support/testing.h"

namespace {

namespace fs = std::filesystem;

using g2p::testing::fixture;
using g2p::testing::temp_dir;
using Phonemes = std::vector<std::string>;

// Four words, "read" with two pronunciations: 3 + 5 + 3 + 3 = 14 reference phonemes, counting
// each word's closest reference (both of read's have 3).
const char* const kReference =
    ";;; a reference for the tests\n"
    "read R EH1 D\n"
    "read(2) R IY1 D\n"
    "tensor T EH1 N S ER0\n"
    "cat K AE1 T\n"
    "dog D AO1 G\n";

std::string write(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

g2p::ErrorRates score_files(const std::string& reference, const std::string& predictions) {
  const g2p::Comparison c = g2p::compare(reference, predictions);
  return g2p::score(c.words, c.predicted);
}

TEST(G2pScoring, ScoresAsErrorRatesByHand) {
  const std::string dir = temp_dir("score_by_hand");
  const std::string ref = write(dir, "ref.dict", kReference);
  // read: its second pronunciation, right. tensor: a stress digit wrong (1 edit; right without
  // stress). cat: the T dropped (1 edit, a consonant). dog: right. Case does not matter.
  const std::string pred =
      write(dir, "pred.txt", "read R IY1 D\nTensor T EH1 N S ER1\ncat K AE1\nDOG D AO1 G\n");
  const g2p::Comparison c = g2p::compare(ref, pred);
  EXPECT_EQ(c.missing, 0);
  EXPECT_EQ(c.extra, 0);
  ASSERT_EQ(c.words.size(), 4u);
  EXPECT_EQ(c.words[0].spelling, "read");
  EXPECT_EQ(c.words[0].pronunciations.size(), 2u);
  const g2p::ErrorRates r = g2p::score(c.words, c.predicted);
  EXPECT_EQ(r.words, 4);
  EXPECT_DOUBLE_EQ(r.wer, 2.0 / 4);
  EXPECT_DOUBLE_EQ(r.per, 2.0 / 14);
  EXPECT_DOUBLE_EQ(r.wer_without_stress, 1.0 / 4);
  EXPECT_DOUBLE_EQ(r.per_without_stress, 1.0 / 14);
  EXPECT_EQ(r.stress_mistakes, 1);
  EXPECT_EQ(r.vowel_mistakes, 0);
  EXPECT_EQ(r.consonant_mistakes, 1);
  fs::remove_all(dir);
}

TEST(G2pScoring, AMissingPredictionIsWrongAndExtraOnesAreCounted) {
  const std::string dir = temp_dir("score_missing");
  const std::string ref = write(dir, "ref.dict", kReference);
  // As above without dog: its 3 phonemes are 3 deletions. zebra and yak are not in the reference.
  const std::string pred = write(dir, "pred.txt",
                                 "read R IY1 D\ntensor T EH1 N S ER1\ncat K AE1\n"
                                 "zebra Z IY1 B R AH0\nyak Y AE1 K\n");
  const g2p::Comparison c = g2p::compare(ref, pred);
  EXPECT_EQ(c.missing, 1);
  EXPECT_EQ(c.extra, 2);
  ASSERT_EQ(c.predicted.size(), 4u);
  EXPECT_TRUE(c.predicted[3].empty());
  const g2p::ErrorRates r = g2p::score(c.words, c.predicted);
  EXPECT_EQ(r.words, 4);  // every reference word is scored
  EXPECT_DOUBLE_EQ(r.wer, 3.0 / 4);
  EXPECT_DOUBLE_EQ(r.per, 5.0 / 14);
  EXPECT_DOUBLE_EQ(r.wer_without_stress, 2.0 / 4);
  EXPECT_DOUBLE_EQ(r.per_without_stress, 4.0 / 14);
  fs::remove_all(dir);
}

TEST(G2pScoring, ReadsG2pfstOutputAndKeepsTheFirstOfAWord) {
  const std::string dir = temp_dir("score_g2pfst");
  const std::string ref = write(dir, "ref.dict", kReference);
  // word<TAB>score<TAB>phonemes, an n-best list for cat (its first, right, counts) and a word
  // g2pfst found nothing for (no prediction). A middle field that is no number is phonemes.
  const std::string pred = write(dir, "pred.txt",
                                 "read\t-2.5\tR IY1 D\n"
                                 "tensor\tT EH1\tN S ER0\n"
                                 "cat\t1.5\tK AE1 T\n"
                                 "cat\t2.75\tK AH0 T\n"
                                 "dog\t7.5\t\n");
  const auto predictions = g2p::read_predictions(pred);
  EXPECT_EQ(predictions.size(), 3u);
  EXPECT_EQ(predictions.at("read"), (Phonemes{"R", "IY1", "D"}));
  EXPECT_EQ(predictions.at("tensor"), (Phonemes{"T", "EH1", "N", "S", "ER0"}));
  EXPECT_EQ(predictions.at("cat"), (Phonemes{"K", "AE1", "T"}));
  const g2p::Comparison c = g2p::compare(ref, pred);
  EXPECT_EQ(c.missing, 1);
  const g2p::ErrorRates r = g2p::score(c.words, c.predicted);
  EXPECT_DOUBLE_EQ(r.wer, 1.0 / 4);
  EXPECT_DOUBLE_EQ(r.per, 3.0 / 14);
  fs::remove_all(dir);
}

TEST(G2pScoring, BadFilesAreNamedWithTheLine) {
  const std::string dir = temp_dir("score_bad");
  const std::string ref = write(dir, "ref.dict", kReference);
  EXPECT_SG_ERROR(score_files(ref, write(dir, "lower.txt", "read R IY1 D\ncat K ae1 T\n")),
                  "lower.txt:2: 'ae1' is not an ARPAbet phoneme");
  EXPECT_SG_ERROR(score_files(ref, write(dir, "bare.txt", "read R IY1 D\n\ncat\n")),
                  "bare.txt:3: no phonemes after the word");
  EXPECT_SG_ERROR(score_files(ref, dir + "/missing.txt"), "cannot open '" + dir + "/missing.txt'");
  EXPECT_SG_ERROR(score_files(ref, dir), "'" + dir + "' is not a regular file");
  EXPECT_SG_ERROR(score_files(ref, write(dir, "none.txt", ";;; nothing\n")),
                  "none.txt' holds no predictions");
  const std::string pred = write(dir, "pred.txt", "read R IY1 D\n");
  EXPECT_SG_ERROR(score_files(write(dir, "empty.dict", ";;; nothing\n"), pred),
                  "empty.dict' holds no pronunciations");
  EXPECT_SG_ERROR(score_files(dir + "/missing.dict", pred), "missing.dict");
  EXPECT_SG_ERROR(score_files(write(dir, "bad.dict", "read R EH1 D\nbad b AE1 D\n"), pred),
                  "bad.dict:2: 'b' is not an ARPAbet phoneme");
  fs::remove_all(dir);
}

TEST(G2pSplit, WritesAlternatesAsTheDictionaryDoes) {
  const std::vector<g2p::Word> words = {{"read", {{"R", "EH1", "D"}, {"R", "IY1", "D"}}},
                                        {"cat", {{"K", "AE1", "T"}}}};
  EXPECT_EQ(g2p::to_cmudict(words), "read R EH1 D\nread(2) R IY1 D\ncat K AE1 T\n");
}

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
    const std::vector<g2p::Word> words = g2p::read_reference(dir + "/" + name + ".dict");
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
  const g2p::ErrorRates r = score_files(dir + "/test.dict", dir + "/test.dict");
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
  write(other, "test.words", "mine\n");
  EXPECT_SG_ERROR(g2p::write_split(fixture(), other, false), other + "/test.words exists");
  EXPECT_FALSE(fs::exists(other + "/train.dict"));
  EXPECT_EQ(lines_of(other + "/test.words"), std::vector<std::string>{"mine"});
  fs::remove_all(dir);
  fs::remove_all(other);
}

}  // namespace
