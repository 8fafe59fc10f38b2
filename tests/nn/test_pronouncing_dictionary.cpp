// nn/data/pronouncing_dictionary.h: another system's predictions scored as `g2p eval` scores the
// model (values computed by hand; Phonetisaurus' g2pfst format; missing and extra words; bad files
// named with the line), and words written back as the dictionary writes them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "nn/data/mistake_kinds.h"
#include "nn/data/pronouncing_dictionary.h"
#include "tests/support/testing.h"

namespace sg::data {
namespace {

namespace fs = std::filesystem;

using Phonemes = std::vector<std::string>;

std::string temp_dir(const std::string& name) {
  const std::string dir =
      (fs::temp_directory_path() / fmt::format("sg_dictionary_{}_{}", name, ::getpid())).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

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

PronunciationScores score_files(const std::string& reference, const std::string& predictions) {
  const Comparison c = compare_predictions(reference, predictions);
  return score_pronunciations(c.words, c.predicted);
}

TEST(PronouncingDictionary, ScoresAsErrorRatesByHand) {
  const std::string dir = temp_dir("score_by_hand");
  const std::string ref = write(dir, "ref.dict", kReference);
  // read: its second pronunciation, right. tensor: a stress digit wrong (1 edit; right without
  // stress). cat: the T dropped (1 edit, a consonant). dog: right. Case does not matter.
  const std::string pred =
      write(dir, "pred.txt", "read R IY1 D\nTensor T EH1 N S ER1\ncat K AE1\nDOG D AO1 G\n");
  const Comparison c = compare_predictions(ref, pred);
  EXPECT_EQ(c.missing, 0);
  EXPECT_EQ(c.extra, 0);
  ASSERT_EQ(c.words.size(), 4u);
  EXPECT_EQ(c.words[0].spelling, "read");
  EXPECT_EQ(c.words[0].pronunciations.size(), 2u);
  const PronunciationScores r = score_pronunciations(c.words, c.predicted);
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

TEST(PronouncingDictionary, AMissingPredictionIsWrongAndExtraOnesAreCounted) {
  const std::string dir = temp_dir("score_missing");
  const std::string ref = write(dir, "ref.dict", kReference);
  // As above without dog: its 3 phonemes are 3 deletions. zebra and yak are not in the reference.
  const std::string pred = write(dir, "pred.txt",
                                 "read R IY1 D\ntensor T EH1 N S ER1\ncat K AE1\n"
                                 "zebra Z IY1 B R AH0\nyak Y AE1 K\n");
  const Comparison c = compare_predictions(ref, pred);
  EXPECT_EQ(c.missing, 1);
  EXPECT_EQ(c.extra, 2);
  ASSERT_EQ(c.predicted.size(), 4u);
  EXPECT_TRUE(c.predicted[3].empty());
  const PronunciationScores r = score_pronunciations(c.words, c.predicted);
  EXPECT_EQ(r.words, 4);  // every reference word is scored
  EXPECT_DOUBLE_EQ(r.wer, 3.0 / 4);
  EXPECT_DOUBLE_EQ(r.per, 5.0 / 14);
  EXPECT_DOUBLE_EQ(r.wer_without_stress, 2.0 / 4);
  EXPECT_DOUBLE_EQ(r.per_without_stress, 4.0 / 14);
  fs::remove_all(dir);
}

// A word with nothing after it is a system that found no pronunciation (g2p pronounce prints a
// model's empty one so): no prediction, scored wrong, not a malformed file.
TEST(PronouncingDictionary, AWordAloneIsNoPrediction) {
  const std::string dir = temp_dir("score_word_alone");
  const std::string ref = write(dir, "ref.dict", kReference);
  const Comparison c = compare_predictions(
      ref, write(dir, "pred.txt", "read R IY1 D\ntensor  \ncat K AE1 T\ndog\n"));
  EXPECT_EQ(c.missing, 2);
  EXPECT_TRUE(c.predicted[1].empty());
  EXPECT_TRUE(c.predicted[3].empty());
  EXPECT_DOUBLE_EQ(score_pronunciations(c.words, c.predicted).wer, 2.0 / 4);
  fs::remove_all(dir);
}

TEST(PronouncingDictionary, ReadsG2pfstOutputAndKeepsTheFirstOfAWord) {
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
  const auto predictions = read_predictions(pred);
  EXPECT_EQ(predictions.size(), 3u);
  EXPECT_EQ(predictions.at("read"), (Phonemes{"R", "IY1", "D"}));
  EXPECT_EQ(predictions.at("tensor"), (Phonemes{"T", "EH1", "N", "S", "ER0"}));
  EXPECT_EQ(predictions.at("cat"), (Phonemes{"K", "AE1", "T"}));
  const Comparison c = compare_predictions(ref, pred);
  EXPECT_EQ(c.missing, 1);
  const PronunciationScores r = score_pronunciations(c.words, c.predicted);
  EXPECT_DOUBLE_EQ(r.wer, 1.0 / 4);
  EXPECT_DOUBLE_EQ(r.per, 3.0 / 14);
  fs::remove_all(dir);
}

TEST(PronouncingDictionary, BadFilesAreNamedWithTheLine) {
  const std::string dir = temp_dir("score_bad");
  const std::string ref = write(dir, "ref.dict", kReference);
  EXPECT_SG_ERROR(score_files(ref, write(dir, "lower.txt", "read R IY1 D\ncat K ae1 T\n")),
                  "lower.txt:2: 'ae1' is not an ARPAbet phoneme");
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

TEST(PronouncingDictionary, WritesAlternatesAsTheDictionaryDoes) {
  const std::vector<DictionaryWord> words = {{"read", {{"R", "EH1", "D"}, {"R", "IY1", "D"}}},
                                             {"cat", {{"K", "AE1", "T"}}}};
  EXPECT_EQ(to_cmudict(words), "read R EH1 D\nread(2) R IY1 D\ncat K AE1 T\n");
}

TEST(PronouncingDictionary, GroupsByWordAndLowercases) {
  const auto words = group_by_word({{"read", {"R", "EH1", "D"}, 1},
                                    {"cat", {"K", "AE1", "T"}, 2},
                                    {"read", {"R", "IY1", "D"}, 3}});
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0].spelling, "read");
  EXPECT_EQ(words[0].pronunciations, (std::vector<Phonemes>{{"R", "EH1", "D"}, {"R", "IY1", "D"}}));
  EXPECT_EQ(words[1].spelling, "cat");
  EXPECT_EQ(lowercase_word("TeNsOr"), "tensor");
  EXPECT_SG_ERROR(lowercase_word(""), "lowercase_word: an empty word has no pronunciation");
  EXPECT_SG_ERROR(score_pronunciations(words, {{"R"}}),
                  "score_pronunciations: 2 words but 1 predictions");
}

// How a score and a wrong word read in every report (g2p eval, g2p score).
TEST(PronouncingDictionary, DescribesScoresAndWrongWords) {
  const PronunciationScores s{.wer = 0.5,
                              .per = 2.0 / 14,
                              .words = 4,
                              .wer_without_stress = 0.25,
                              .per_without_stress = 1.0 / 14,
                              .stress_mistakes = 1,
                              .consonant_mistakes = 1};
  EXPECT_EQ(describe(s),
            "WER 50.00%  PER 14.29%  (without stress: WER 25.00%  PER 7.14%)\n"
            "  wrong words by kind: stress only 1 (25.00%), vowels only 0 (0.00%), a consonant 1 "
            "(25.00%)");
  const std::vector<Phonemes> read = {{"R", "EH1", "D"}, {"R", "IY1", "D"}};
  EXPECT_EQ(describe_if_wrong("read", {"R", "IY1", "D"}, read), std::nullopt);
  const std::string wrong = describe_if_wrong("read", {"R", "IY0", "D"}, read).value_or("");
  EXPECT_NE(wrong.find("read"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("predicted R IY0 D"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find("dictionary R EH1 D"), std::string::npos) << wrong;
  EXPECT_NE(wrong.find(to_string(MistakeKind::kStress)), std::string::npos) << wrong;
  EXPECT_NE(describe_if_wrong("read", {}, read).value_or("").find("(none)"), std::string::npos);
  EXPECT_SG_ERROR(describe_if_wrong("read", {}, {}), "'read' has no reference pronunciation");
  // The first `count` wrong words, in order, right ones skipped.
  const std::vector<DictionaryWord> words = {
      {"read", read}, {"a", {{"AH0"}}}, {"b", {{"B", "IY1"}}}};
  const std::vector<std::vector<std::string>> predicted = {{"R", "IY1", "D"}, {"EY1"}, {"B"}};
  const std::vector<std::string> two = first_mistakes(words, predicted, 5);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0], describe_if_wrong("a", {"EY1"}, {{"AH0"}}).value());
  EXPECT_EQ(two[1], describe_if_wrong("b", {"B"}, {{"B", "IY1"}}).value());
  EXPECT_EQ(first_mistakes(words, predicted, 1), std::vector<std::string>{two[0]});
  EXPECT_TRUE(first_mistakes(words, predicted, 0).empty());
  EXPECT_SG_ERROR(first_mistakes(words, {}, 1), "first_mistakes: 3 words but 0 predictions");
}

}  // namespace
}  // namespace sg::data
