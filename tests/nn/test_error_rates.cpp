// sg::data::ErrorRates: WER and PER on hand-made cases.
#include <gtest/gtest.h>

#include "nn/data/error_rates.h"
#include "tests/support/testing.h"

using sg::data::edit_distance;
using sg::data::ErrorRates;
using P = std::vector<std::string>;

TEST(ErrorRates, EditDistance) {
  EXPECT_EQ(edit_distance({}, {}), 0);
  EXPECT_EQ(edit_distance({"A"}, {}), 1);
  EXPECT_EQ(edit_distance({}, {"A", "B"}), 2);
  EXPECT_EQ(edit_distance({"K", "AE1", "T"}, {"K", "AE1", "T"}), 0);
  EXPECT_EQ(edit_distance({"K", "AE1", "T"}, {"K", "AH0", "T"}), 1);       // substitution
  EXPECT_EQ(edit_distance({"K", "AE1", "T"}, {"K", "AE1", "T", "S"}), 1);  // insertion
  EXPECT_EQ(edit_distance({"K", "AE1", "T", "S"}, {"AE1", "T", "S"}), 1);  // deletion
  // kitten -> sitting, the textbook case: 3.
  P kitten{"k", "i", "t", "t", "e", "n"}, sitting{"s", "i", "t", "t", "i", "n", "g"};
  EXPECT_EQ(edit_distance(kitten, sitting), 3);
  EXPECT_EQ(edit_distance(sitting, kitten), 3);
}

TEST(ErrorRates, AnyReferenceMakesAWordRight) {
  ErrorRates r;
  r.add({"R", "IY1", "D"}, {{"R", "EH1", "D"}, {"R", "IY1", "D"}});  // right (2nd reference)
  EXPECT_EQ(r.wrong_words(), 0);
  EXPECT_DOUBLE_EQ(r.wer(), 0.0);
  EXPECT_DOUBLE_EQ(r.per(), 0.0);
  EXPECT_EQ(r.reference_phonemes(), 3);
}

TEST(ErrorRates, PerAgainstTheClosestReference) {
  ErrorRates r;
  // "tensor": one substitution against the first reference, two against the second.
  r.add({"T", "EH1", "N", "S", "AO0", "R"},
        {{"T", "EH1", "N", "S", "ER0"}, {"T", "EH1", "N", "S", "AO1", "R"}});
  EXPECT_EQ(r.phoneme_edits(), 1);  // AO0 -> AO1 against the second (6 phonemes)
  EXPECT_EQ(r.reference_phonemes(), 6);
  r.add({"K", "AE1", "T"}, {{"K", "AE1", "T"}});  // right
  r.add({"D", "AO1"}, {{"D", "AO1", "G"}});       // one deletion
  r.add({}, {{"AH0"}});                           // nothing predicted
  EXPECT_EQ(r.words(), 4);
  EXPECT_EQ(r.wrong_words(), 3);
  EXPECT_DOUBLE_EQ(r.wer(), 0.75);
  EXPECT_EQ(r.phoneme_edits(), 3);
  EXPECT_EQ(r.reference_phonemes(), 6 + 3 + 3 + 1);
  EXPECT_DOUBLE_EQ(r.per(), 3.0 / 13.0);
}

TEST(ErrorRates, WithoutStress) {
  using sg::data::without_stress;
  EXPECT_EQ(without_stress({"T", "EH1", "N", "S", "ER0"}), (P{"T", "EH", "N", "S", "ER"}));
  EXPECT_EQ(without_stress({"AA2", "B"}), (P{"AA", "B"}));
  EXPECT_EQ(without_stress({}), P{});
  EXPECT_EQ(without_stress({"7"}), P{"7"});  // not a vowel with a digit: kept
  // A stress slip is a wrong word with stress and a right one without.
  ErrorRates with, without;
  const P predicted{"R", "IY0", "D"};
  const std::vector<P> references{{"R", "EH1", "D"}, {"R", "IY1", "D"}};
  with.add(predicted, references);
  std::vector<P> stripped;
  for (const P& r : references) stripped.push_back(without_stress(r));
  without.add(without_stress(predicted), stripped);
  EXPECT_DOUBLE_EQ(with.wer(), 1.0);
  EXPECT_DOUBLE_EQ(with.per(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(without.wer(), 0.0);
  EXPECT_DOUBLE_EQ(without.per(), 0.0);
}

TEST(ErrorRates, EmptyAndBadInput) {
  ErrorRates r;
  EXPECT_DOUBLE_EQ(r.wer(), 0.0);
  EXPECT_DOUBLE_EQ(r.per(), 0.0);
  EXPECT_SG_ERROR(r.add({"A"}, {}), "at least one reference");
}
