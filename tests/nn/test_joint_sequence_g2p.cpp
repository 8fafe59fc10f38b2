// nn/data/graphone_aligner.h and joint_sequence_g2p.h: the aligner learns chunks a dictionary
// forces ("x" is K S, "ph" is F) and carries them to other words; pairs no cut fits are counted;
// the joint-sequence model pronounces what it was trained on, its n-best distinct and in order,
// its score of a pronunciation the one its search gave; bad input named.
#include <gtest/gtest.h>

#include <set>

#include "nn/data/joint_sequence_g2p.h"
#include "nn/data/pronouncing_dictionary.h"
#include "tests/support/testing.h"

namespace sg::data {
namespace {

using Phonemes = std::vector<std::string>;

std::string fixture() { return std::string(SG_TEST_DATA_DIR) + "/cmudict_slice.dict"; }

std::vector<std::string> cut_of(const GraphoneAligner& aligner, const std::string& spelling,
                                const Phonemes& phonemes) {
  const auto cut = aligner.align(spelling, phonemes);
  if (!cut) return {"(none)"};
  std::vector<std::string> out;
  for (const Graphone& g : *cut) out.push_back(to_string(g));
  return out;
}

TEST(GraphoneAligner, LearnsTheChunksTheDictionaryForces) {
  // "x" alone can only be x|K S, "ph" alone only ph|F (a silent letter starts nearly impossible):
  // EM carries both into the longer words.
  const std::vector<SpelledPronunciation> pairs = {{"x", {"K", "S"}},
                                                   {"ph", {"F"}},
                                                   {"ax", {"AE1", "K", "S"}},
                                                   {"xa", {"K", "S", "AA1"}},
                                                   {"pha", {"F", "AA1"}},
                                                   {"aph", {"AE1", "F"}},
                                                   {"a", {"AA1"}},
                                                   {"a", {"AE1"}}};
  const GraphoneAligner aligner(pairs, 12);
  EXPECT_EQ(aligner.unalignable(), 0);
  EXPECT_EQ(cut_of(aligner, "xa", {"K", "S", "AA1"}), (std::vector<std::string>{"x|K S", "a|AA1"}));
  EXPECT_EQ(cut_of(aligner, "aph", {"AE1", "F"}), (std::vector<std::string>{"a|AE1", "ph|F"}));
  EXPECT_EQ(cut_of(aligner, "phax", {"F", "AE1", "K", "S"}),
            (std::vector<std::string>{"ph|F", "a|AE1", "x|K S"}));
  EXPECT_GT(aligner.probability({"x", {"K", "S"}}), aligner.probability({"x", {"K"}}));
  EXPECT_EQ(aligner.probability({"q", {"K"}}), 0.0);  // never seen
}

TEST(GraphoneAligner, CountsPairsNoCutFitsAndRefusesWhenNoneDoes) {
  // Three phonemes for one letter (at most two), and an empty pronunciation.
  const GraphoneAligner aligner({{"x", {"EH1", "K", "S"}}, {"ox", {"AA1", "K", "S"}}, {"a", {}}},
                                3);
  EXPECT_EQ(aligner.unalignable(), 2);
  EXPECT_FALSE(aligner.align("x", {"EH1", "K", "S"}).has_value());
  EXPECT_SG_ERROR(GraphoneAligner({{"x", {"EH1", "K", "S"}}}, 3),
                  "GraphoneAligner: none of the 1 pairs can be aligned");
  EXPECT_SG_ERROR(GraphoneAligner({{"a", {"AH0"}}}, 0),
                  "GraphoneAligner: iterations must be at least 1, got 0");
}

TEST(JointSequenceG2p, PronouncesTheWordsItWasTrainedOn) {
  const std::vector<DictionaryWord> words = read_dictionary_words(fixture());
  const JointSequenceG2p g2p(words, {.order = 6});
  EXPECT_GT(g2p.graphones(), 50);
  int64_t right = 0;
  for (const DictionaryWord& w : words) {
    const auto best = g2p.pronounce(w.spelling, 1);
    ASSERT_EQ(best.size(), 1u) << w.spelling;
    const auto& refs = w.pronunciations;
    right += std::find(refs.begin(), refs.end(), best[0].phonemes) != refs.end();
  }
  // A high-order n-gram remembers its training words (all but a few with alternates).
  EXPECT_GE(right, static_cast<int64_t>(words.size()) * 9 / 10) << right << " of " << words.size();
}

TEST(JointSequenceG2p, NBestIsDistinctInOrderAndScoredAsLogProbScoresIt) {
  const JointSequenceG2p g2p(read_dictionary_words(fixture()), {.order = 4});
  const auto five = g2p.pronounce("tensor", 5);
  ASSERT_EQ(five.size(), 5u);
  std::set<Phonemes> distinct;
  for (size_t i = 0; i < five.size(); ++i) {
    distinct.insert(five[i].phonemes);
    if (i > 0) {
      EXPECT_LE(five[i].log_prob, five[i - 1].log_prob);
    }
    const auto scored = g2p.log_prob("tensor", five[i].phonemes);
    ASSERT_TRUE(scored.has_value());
    // The constrained search finds at least the cut the free one found (maybe a better one).
    EXPECT_GE(*scored, five[i].log_prob - 1e-9);
  }
  EXPECT_EQ(distinct.size(), 5u);
  EXPECT_DOUBLE_EQ(*g2p.log_prob("tensor", five[0].phonemes), five[0].log_prob);
  // A pronunciation no cut into known graphones gives: no score, not a crash.
  EXPECT_FALSE(g2p.log_prob("tensor", {"ZH", "ZH", "ZH", "ZH", "ZH", "ZH", "ZH"}).has_value());
}

TEST(JointSequenceG2p, ALetterNeverSeenHasNoPronunciation) {
  const JointSequenceG2p g2p({{"ab", {{"AE1", "B"}}}, {"ba", {{"B", "AA1"}}}}, {.order = 2});
  EXPECT_TRUE(g2p.pronounce("abz").empty());
  EXPECT_EQ(g2p.pronounce("ab")[0].phonemes, (Phonemes{"AE1", "B"}));
}

TEST(JointSequenceG2p, RefusesBadOptionsByName) {
  const std::vector<DictionaryWord> words = {{"ab", {{"AE1", "B"}}}};
  EXPECT_SG_ERROR(JointSequenceG2p(words, {.order = 9}),
                  "JointSequenceG2p: order 9 is not in 1..8");
  EXPECT_SG_ERROR(JointSequenceG2p(words, {.beam = 0}),
                  "JointSequenceG2p: beam must be at least 1");
  const JointSequenceG2p g2p(words, {.order = 2});
  EXPECT_SG_ERROR(g2p.pronounce("ab", 0), "JointSequenceG2p::pronounce: n must be at least 1");
}

}  // namespace
}  // namespace sg::data
