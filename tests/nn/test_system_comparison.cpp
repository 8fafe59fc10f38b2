// nn/data/system_comparison.h: two systems' predictions side by side, the counts computed by hand
// (with stress and without, by length and by letter context), the rarest letter trigram, and bad
// input named.
#include <gtest/gtest.h>

#include "nn/data/system_comparison.h"
#include "tests/support/testing.h"

namespace sg::data {
namespace {

using Phonemes = std::vector<std::string>;

// "read" has two right pronunciations.
std::vector<DictionaryWord> reference() {
  return {{"read", {{"R", "EH1", "D"}, {"R", "IY1", "D"}}},
          {"tensor", {{"T", "EH1", "N", "S", "ER0"}}},
          {"cat", {{"K", "AE1", "T"}}},
          {"dog", {{"D", "AO1", "G"}}}};
}

// read: first right (its second pronunciation), second a stress digit off. tensor: first a
// stress digit off, second right. cat: both wrong, in sounds too. dog: both right.
const std::vector<Phonemes> kFirst = {
    {"R", "IY1", "D"}, {"T", "EH1", "N", "S", "ER1"}, {"K", "AE1"}, {"D", "AO1", "G"}};
const std::vector<Phonemes> kSecond = {
    {"R", "IY0", "D"}, {"T", "EH1", "N", "S", "ER0"}, {"K", "AH1", "T"}, {"D", "AO1", "G"}};

TEST(SystemComparison, CountsEachWordByHand) {
  const SystemComparison c = compare_systems(reference(), kFirst, kSecond, {});
  const Agreement& a = c.all.with_stress;
  EXPECT_EQ(a.words, 4);
  EXPECT_EQ(a.both_right, 1);   // dog
  EXPECT_EQ(a.only_first, 1);   // read
  EXPECT_EQ(a.only_second, 1);  // tensor
  EXPECT_EQ(a.both_wrong, 1);   // cat
  EXPECT_DOUBLE_EQ(a.wer_first(), 0.5);
  EXPECT_DOUBLE_EQ(a.wer_second(), 0.5);
  EXPECT_DOUBLE_EQ(a.oracle_wer(), 0.25);
  // Without stress, read and tensor are right for both; cat is still wrong for both.
  const Agreement& sounds = c.all.without_stress;
  EXPECT_EQ(sounds.both_right, 3);
  EXPECT_EQ(sounds.only_first + sounds.only_second, 0);
  EXPECT_EQ(sounds.both_wrong, 1);
  EXPECT_DOUBLE_EQ(sounds.wer_first(), 0.25);
  // The mistakes by kind: first a stress (tensor) and a consonant (cat's T dropped); second a
  // stress (read) and a vowel (cat's AH1).
  EXPECT_EQ(c.first_kinds.stress(), 1);
  EXPECT_EQ(c.first_kinds.consonants(), 1);
  EXPECT_EQ(c.second_kinds.stress(), 1);
  EXPECT_EQ(c.second_kinds.vowels(), 1);
  EXPECT_TRUE(c.by_context.empty());  // no training words given
}

TEST(SystemComparison, GroupsByLengthKeepOnlyGroupsWithWords) {
  const SystemComparison c = compare_systems(reference(), kFirst, kSecond, {});
  ASSERT_EQ(c.by_length.size(), 2u);
  EXPECT_EQ(c.by_length[0].label, "1-4 letters");  // read, cat, dog
  EXPECT_EQ(c.by_length[0].with_stress.words, 3);
  EXPECT_EQ(c.by_length[0].with_stress.only_first, 1);
  EXPECT_EQ(c.by_length[0].with_stress.both_wrong, 1);
  EXPECT_EQ(c.by_length[1].label, "5-6 letters");  // tensor
  EXPECT_EQ(c.by_length[1].with_stress.only_second, 1);
  EXPECT_EQ(c.by_length[1].without_stress.both_right, 1);
}

TEST(LetterContexts, RarestTrigramCountsTrainingWordsOnce) {
  const LetterContexts contexts({{"cat", {{"K", "AE1", "T"}}}, {"cart", {{"K", "AA1", "R", "T"}}}});
  EXPECT_EQ(contexts.rarest("cat"), 1);  // ^ca in both words, cat and at$ in one
  EXPECT_EQ(contexts.rarest("car"), 0);  // ar$ never
  EXPECT_EQ(contexts.rarest("a"), 0);    // ^a$: a word of one letter has one trigram
  // "aaaa" holds "aaa" twice, but it is one word that has it: ^aa and aa$ are in two words.
  const LetterContexts repeated({{"aaaa", {{"AA1"}}}, {"aa", {{"AA1"}}}});
  EXPECT_EQ(repeated.rarest("aaa"), 1);
}

TEST(SystemComparison, GroupsByTheRarestLetterContext) {
  // Training: "dog" and "dot" (^do twice); "cat" has trigrams training never saw.
  const std::vector<DictionaryWord> training = {{"dog", {{"D", "AO1", "G"}}},
                                                {"dot", {{"D", "AA1", "T"}}}};
  const SystemComparison c = compare_systems(reference(), kFirst, kSecond, training);
  ASSERT_EQ(c.by_context.size(), 2u);
  EXPECT_EQ(c.by_context[0].label, "a trigram never seen");  // read, tensor, cat
  EXPECT_EQ(c.by_context[0].with_stress.words, 3);
  EXPECT_EQ(c.by_context[1].label, "rarest trigram 1-9 times");  // dog: og$ once
  EXPECT_EQ(c.by_context[1].with_stress.both_right, 1);
}

TEST(SystemComparison, AnEmptyPredictionIsWrong) {
  std::vector<Phonemes> none(4);
  const SystemComparison c = compare_systems(reference(), kFirst, none, {});
  EXPECT_EQ(c.all.with_stress.only_second, 0);
  EXPECT_EQ(c.all.with_stress.only_first, 2);  // read, dog
  EXPECT_DOUBLE_EQ(c.all.with_stress.wer_second(), 1.0);
  EXPECT_EQ(c.second_kinds.consonants(), 4);  // every phoneme dropped
}

TEST(SystemComparison, DescribesBothTablesWithTheNames) {
  const std::string text =
      describe(compare_systems(reference(), kFirst, kSecond, {}), "model", "ngram");
  EXPECT_NE(text.find("WER with stress"), std::string::npos) << text;
  EXPECT_NE(text.find("WER without stress"), std::string::npos) << text;
  EXPECT_NE(text.find("all words"), std::string::npos) << text;
  EXPECT_NE(text.find("50.00%"), std::string::npos) << text;  // each system's WER
  EXPECT_NE(text.find("25.00%"), std::string::npos) << text;  // the oracle's
  EXPECT_NE(text.find("model wrong words by kind: stress only 1, vowels only 0, a consonant 1"),
            std::string::npos)
      << text;
}

TEST(SystemComparison, RefusesPredictionsOfAnotherLength) {
  EXPECT_SG_ERROR(compare_systems(reference(), kFirst, {{"D", "AO1", "G"}}, {}),
                  "compare_systems: 4 words, but 4 predictions of the first system and 1 of the "
                  "second");
  EXPECT_SG_ERROR(compare_systems({{"", {{"A"}}}}, {{"A"}}, {{"A"}}, {}),
                  "compare_systems: word 0 ('') has no spelling or no pronunciation");
}

}  // namespace
}  // namespace sg::data
