// sg::data::MistakeKinds: wrong pronunciations sorted into stress, vowel and consonant mistakes,
// on hand-made cases (the kinds chapter 12b's table of real mistakes counts).
#include <gtest/gtest.h>

#include "nn/data/mistake_kinds.h"
#include "tests/support/testing.h"

using sg::data::is_vowel;
using sg::data::mistake_kind;
using sg::data::MistakeKind;
using sg::data::MistakeKinds;

TEST(ErrorRatesMistakeKinds, VowelsAreTheFifteenArpabetVowelsWithAnyStress) {
  for (const char* v : {"AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW",
                        "OY", "UH", "UW", "AH0", "ER1", "OY2"})
    EXPECT_TRUE(is_vowel(v)) << v;
  for (const char* c :
       {"B", "CH", "D", "DH", "HH", "JH", "NG", "R", "Y", "ZH", "W", "", "A", "AHH", "AH3", "0"})
    EXPECT_FALSE(is_vowel(c)) << c;
}

TEST(ErrorRatesMistakeKinds, EachKindOnARealMistake) {
  // read: the right sounds, the stress digit wrong.
  EXPECT_EQ(mistake_kind({"R", "IY0", "D"}, {{"R", "IY1", "D"}}), MistakeKind::kStress);
  // accredit: the consonants right; a reduced vowel is not reduced.
  EXPECT_EQ(mistake_kind({"AH0", "K", "R", "EH1", "D", "IH0", "T"},
                         {{"AH0", "K", "R", "EH2", "D", "AH0", "T"}}),
            MistakeKind::kVowels);
  // acne: the final vowel dropped (a vowel deletion is still a vowel mistake).
  EXPECT_EQ(mistake_kind({"AE1", "K", "N"}, {{"AE1", "K", "N", "IY0"}}), MistakeKind::kVowels);
  // aegis: the soft g missed.
  EXPECT_EQ(mistake_kind({"EH1", "G", "IH0", "S"}, {{"IY1", "JH", "AH0", "S"}}),
            MistakeKind::kConsonants);
  // absurdities: s voiced.
  EXPECT_EQ(mistake_kind({"AE0", "B", "Z", "ER1", "D", "AH0", "T", "IY0", "Z"},
                         {{"AH0", "B", "S", "ER1", "D", "AH0", "T", "IY0", "Z"}}),
            MistakeKind::kConsonants);
  // A consonant added at the end, every vowel right.
  EXPECT_EQ(mistake_kind({"T", "EH1", "N", "S", "ER0", "Z"}, {{"T", "EH1", "N", "S", "ER0"}}),
            MistakeKind::kConsonants);
  EXPECT_EQ(mistake_kind({"T", "EH1", "N"}, {{"T", "EH1", "N"}}), MistakeKind::kNone);
  EXPECT_EQ(mistake_kind({}, {{"T"}}), MistakeKind::kConsonants);
}

TEST(ErrorRatesMistakeKinds, TheMildestAgainstAnyPronunciation) {
  // Against the first only a consonant differs; against the second only the stress.
  const std::vector<std::vector<std::string>> refs{{"R", "EH1", "D"}, {"R", "IY1", "D"}};
  EXPECT_EQ(mistake_kind({"R", "IY2", "D"}, refs), MistakeKind::kStress);
  EXPECT_EQ(mistake_kind({"R", "IY1", "D"}, refs), MistakeKind::kNone);
  EXPECT_EQ(mistake_kind({"R", "IH1", "D"}, refs), MistakeKind::kVowels);
  EXPECT_EQ(mistake_kind({"R", "IY1", "T"}, refs), MistakeKind::kConsonants);
}

TEST(ErrorRatesMistakeKinds, CountsEveryWordAndEachKind) {
  MistakeKinds kinds;
  EXPECT_EQ(kinds.add({"R", "IY1", "D"}, {{"R", "IY1", "D"}}), MistakeKind::kNone);
  kinds.add({"R", "IY0", "D"}, {{"R", "IY1", "D"}});
  kinds.add({"R", "IY0", "D"}, {{"R", "IY1", "D"}});
  kinds.add({"R", "EH1", "D"}, {{"R", "IY1", "D"}});
  EXPECT_EQ(kinds.add({"R", "IY1", "T"}, {{"R", "IY1", "D"}}), MistakeKind::kConsonants);
  EXPECT_EQ(kinds.words(), 5);
  EXPECT_EQ(kinds.wrong(), 4);
  EXPECT_EQ(kinds.stress(), 2);
  EXPECT_EQ(kinds.vowels(), 1);
  EXPECT_EQ(kinds.consonants(), 1);
  EXPECT_STREQ(to_string(MistakeKind::kVowels), "vowels");
}

TEST(ErrorRatesMistakeKinds, AWordWithoutReferencesIsAnError) {
  EXPECT_SG_ERROR(mistake_kind({"A"}, {}), "mistake_kind: a word needs at least one reference");
}
