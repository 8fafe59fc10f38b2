// nn/data/ngram_model.h: interpolated modified Kneser-Ney, its probabilities computed by hand on
// tiny corpora (continuation counts below the top order, raw counts after <s>), Chen and
// Goodman's discounts, every distribution summing to 1, and bad input named.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "nn/data/ngram_model.h"
#include "tests/support/testing.h"

namespace sg::data {
namespace {

double probability(const NgramModel& lm, std::vector<int32_t> history, int32_t token) {
  return std::exp(lm.log_prob(history, token));
}

// Sentences "0", "0", "1" over a vocabulary of 2. As a unigram model: counts 0:2, 1:1, </s>:3,
// total 6; one count each of 1, 2 and 3 and none of 4, so the default discounts 0.5, 1, 1.5;
// the uniform floor's weight (0.5 + 1 + 1.5) / 6 = 1/2, over 3 tokens.
TEST(NgramModel, UnigramByHand) {
  const NgramModel lm({{0}, {0}, {1}}, 1, 2);
  EXPECT_NEAR(probability(lm, {}, 0), (2 - 1.0) / 6 + 0.5 / 3, 1e-12);         // 1/3
  EXPECT_NEAR(probability(lm, {}, 1), (1 - 0.5) / 6 + 0.5 / 3, 1e-12);         // 1/4
  EXPECT_NEAR(probability(lm, {}, lm.eos()), (3 - 1.5) / 6 + 0.5 / 3, 1e-12);  // 5/12
}

// The same sentences as a bigram model. Unigrams are now continuation counts, the number of
// different tokens before each: 0 after <s> only (1), 1 after <s> only (1), </s> after 0 and 1
// (2): total 4, weight of the floor (0.5 * 2 + 1 * 1) / 4 = 1/2, so P1(0) = P1(1) = 0.5/4 + 1/6
// = 7/24 and P1(</s>) = 1/4 + 1/6 = 10/24. After <s>, raw counts (nothing precedes <s>): 0 twice,
// 1 once, total 3, weight of the lower order (0.5 + 1) / 3 = 1/2.
TEST(NgramModel, BigramByHandUsesContinuationCountsBelow) {
  const NgramModel lm({{0}, {0}, {1}}, 2, 2);
  EXPECT_NEAR(probability(lm, {lm.bos()}, 0), (2 - 1.0) / 3 + 0.5 * 7 / 24, 1e-12);  // 23/48
  EXPECT_NEAR(probability(lm, {lm.bos()}, 1), (1 - 0.5) / 3 + 0.5 * 7 / 24, 1e-12);  // 15/48
  EXPECT_NEAR(probability(lm, {lm.bos()}, lm.eos()), 0.5 * 10 / 24, 1e-12);          // 10/48
  // After 1, seen once and followed by </s> only: half the mass (D1 = 0.5 of a count of 1) goes
  // to the unigrams. Only the last token of a longer history counts.
  EXPECT_NEAR(probability(lm, {1}, 0), 0.5 * 7 / 24, 1e-12);
  EXPECT_NEAR(probability(lm, {0, 1}, 0), 0.5 * 7 / 24, 1e-12);
  // A history never seen (token 2 of a vocabulary of 3) backs off to the unigrams whole.
  const NgramModel wider({{0}, {0}, {1}}, 2, 3);
  EXPECT_NEAR(probability(wider, {2}, 0), probability(wider, {}, 0), 1e-12);
}

// Counts of counts n1..n4 = 5, 2, 1, 1 (tokens 0-3 and </s> once, 4 and 5 twice, 6 three times,
// 7 four times): Y = 5 / (5 + 2 * 2) = 5/9, D1 = 1 - 2Y * 2/5 = 5/9, D2 = 2 - 3Y * 1/2 = 7/6,
// D3 = 3 - 4Y * 1/1 = 7/9.
TEST(NgramModel, DiscountsAreChenAndGoodmans) {
  const NgramModel lm({{0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 7, 7, 7, 7}}, 1, 8);
  const auto d = lm.discounts(1);
  EXPECT_NEAR(d[0], 5.0 / 9, 1e-12);
  EXPECT_NEAR(d[1], 7.0 / 6, 1e-12);
  EXPECT_NEAR(d[2], 7.0 / 9, 1e-12);
}

TEST(NgramModel, EveryDistributionSumsToOne) {
  std::mt19937 rng(7);
  std::vector<std::vector<int32_t>> sentences(300);
  for (auto& s : sentences) {
    s.resize(1 + rng() % 9);
    for (auto& t : s) t = static_cast<int32_t>(rng() % 6 == 0 ? rng() % 12 : rng() % 4);
  }
  for (int order : {1, 3, 5}) {
    const NgramModel lm(sentences, order, 12);
    for (std::vector<int32_t> history : std::vector<std::vector<int32_t>>{
             {}, {lm.bos()}, {lm.bos(), 2}, {1, 2, 3}, {3, 3, 3, 3}, {11, 10, 9}}) {
      double sum = 0;
      for (int32_t t = 0; t < 12; ++t) sum += probability(lm, history, t);
      sum += probability(lm, history, lm.eos());
      EXPECT_NEAR(sum, 1.0, 1e-12) << "order " << order << ", history of " << history.size();
    }
  }
}

TEST(NgramModel, OnlyTheLastOrderMinusOneTokensOfAHistoryCount) {
  const NgramModel lm({{0, 1, 2}, {1, 2, 0}, {2, 0, 1}}, 3, 3);
  EXPECT_EQ(lm.log_prob(std::vector<int32_t>{2, 2, 0, 1}, 2),
            lm.log_prob(std::vector<int32_t>{0, 1}, 2));
  EXPECT_GT(probability(lm, {0, 1}, 2), probability(lm, {0, 1}, 0));  // seen beats unseen
}

TEST(NgramModel, RefusesBadInputByName) {
  EXPECT_SG_ERROR(NgramModel({{0}}, 0, 2), "NgramModel: order 0 is not in 1..8");
  EXPECT_SG_ERROR(NgramModel({{0}}, 9, 2), "NgramModel: order 9 is not in 1..8");
  EXPECT_SG_ERROR(NgramModel({{0}}, 2, 0), "NgramModel: a vocabulary of 0 tokens");
  EXPECT_SG_ERROR(NgramModel({{0}, {0, 5}}, 2, 3),
                  "NgramModel: sentence 1 has token 5, outside 0..2");
  const NgramModel lm({{0}}, 2, 3);
  EXPECT_SG_ERROR(lm.log_prob(std::vector<int32_t>{}, lm.bos()),
                  "NgramModel::log_prob: token 3 is not in 0..2 nor </s> (4)");
}

}  // namespace
}  // namespace sg::data
