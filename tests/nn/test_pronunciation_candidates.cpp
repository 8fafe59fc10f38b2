// nn/data/pronunciation_candidates.h: both systems' guesses, each scored by both (the model's as
// its beam search and score_in_batches score them, the n-gram's as its own log_prob), and the
// choice between them by hand: the weight, the length penalty, guesses one system cannot score.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "nn/data/pronunciation_candidates.h"
#include "nn/transformer.h"
#include "tests/support/testing.h"

namespace sg::data {
namespace {

using Phonemes = std::vector<std::string>;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

TEST(PronunciationCandidates, ChooseWeighsTheNgramAndTheLength) {
  // a: the model's favourite; b: the n-gram's; c: a longer guess both like a little.
  const std::vector<PronunciationCandidate> list = {{{"K", "AE1", "T"}, -1.0, -9.0},
                                                    {{"K", "AA1", "T"}, -2.0, -3.0},
                                                    {{"K", "AE1", "T", "S"}, -2.2, -4.0}};
  EXPECT_EQ(choose_pronunciation(list, 0, 0), list[0].phonemes);  // the model alone
  // w = 1: a -10, b -5, c -6.2.
  EXPECT_EQ(choose_pronunciation(list, 1, 0), list[1].phonemes);
  // w = 0.1: a -1.9, b -2.3, c -2.6.
  EXPECT_EQ(choose_pronunciation(list, 0.1, 0), list[0].phonemes);
  // Length penalty 1 divides by phonemes + 1: with w = 1, a -10/4, b -5/4, c -6.2/5 = -1.24 wins.
  EXPECT_EQ(choose_pronunciation(list, 1, 1), list[2].phonemes);
  // Every word's list at once.
  EXPECT_EQ(choose_pronunciations({list, list}, 1, 0),
            (std::vector<Phonemes>{list[1].phonemes, list[1].phonemes}));
}

TEST(PronunciationCandidates, AGuessOneSideCannotScoreLosesUnlessNothingScores) {
  const std::vector<PronunciationCandidate> list = {{{"K", "AE1", "T"}, -1.0, kNegInf},
                                                    {{"K", "AA1", "T"}, -5.0, -20.0}};
  EXPECT_EQ(choose_pronunciation(list, 0.5, 0.6), list[1].phonemes);
  EXPECT_EQ(choose_pronunciation(list, 0, 0.6), list[0].phonemes);  // weight 0: n-gram ignored
  const std::vector<PronunciationCandidate> unscored = {{{"K"}, kNegInf, kNegInf},
                                                        {{"G"}, kNegInf, kNegInf}};
  EXPECT_EQ(choose_pronunciation(unscored, 1, 0.6), unscored[0].phonemes);
  EXPECT_SG_ERROR(choose_pronunciation({}, 1, 0.6), "choose_pronunciation: no candidates");
  EXPECT_SG_ERROR(choose_pronunciation(list, -1, 0.6),
                  "choose_pronunciation: ngram_weight must be >= 0, got -1");
}

// A small random Transformer over letters a, b, c and four phonemes, and an n-gram trained on a
// few words of them: every guess of both lists carries the score each system gives it.
TEST(PronunciationCandidates, EveryGuessIsScoredByBothSystems) {
  manual_seed(5);
  const Vocabulary letters =
      Vocabulary::from_symbols({"<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c"});
  const Vocabulary phonemes =
      Vocabulary::from_symbols({"<pad>", "<bos>", "<eos>", "<unk>", "AE1", "B", "K", "AH0"});
  nn::TransformerOptions o;
  o.src_vocab = letters.size(), o.tgt_vocab = phonemes.size();
  o.d_model = 16, o.heads = 2, o.d_ff = 32, o.max_len = 16, o.dropout = 0.0;
  o.num_encoder_layers = o.num_decoder_layers = 1;
  nn::Transformer model(o);
  model.eval();
  const JointSequenceG2p ngram({{"ab", {{"AE1", "B"}}},
                                {"cab", {{"K", "AE1", "B"}}},
                                {"bac", {{"B", "AE1", "K"}}},
                                {"abc", {{"AH0", "B", "K"}}},
                                {"ca", {{"K", "AH0"}}}},
                               {.order = 3});
  const std::vector<std::string> spellings = {"cab", "ba", "acb"};
  std::vector<std::vector<int64_t>> sources;
  for (const std::string& w : spellings) {
    std::vector<std::string> chars;
    for (char ch : w) chars.emplace_back(1, ch);
    sources.push_back(letters.encode(chars));
  }
  const nn::GenerationOptions g{
      .max_length = 8, .bos = Vocabulary::kBos, .eos = Vocabulary::kEos, .pad = Vocabulary::kPad};
  const auto lists = pronunciation_candidates(model, sources, spellings, phonemes, g, ngram,
                                              {.beam_size = 3, .ngram_nbest = 3, .batch_size = 2});
  ASSERT_EQ(lists.size(), 3u);
  const auto beams = nn::beam_search_in_batches(model, sources, g, {.beam_size = 3}, 2);
  for (size_t i = 0; i < lists.size(); ++i) {
    std::set<Phonemes> seen;
    for (size_t k = 0; k < lists[i].size(); ++k) {
      const PronunciationCandidate& c = lists[i][k];
      EXPECT_TRUE(seen.insert(c.phonemes).second) << "a guess twice for " << spellings[i];
      if (k < beams[i].size()) {  // the model's n-best first, in its order
        EXPECT_EQ(c.phonemes, phonemes.decode(beams[i][k].tokens));
        EXPECT_NEAR(c.model_log_prob, beams[i][k].log_prob, 1e-9);
      } else {
        const double scored =
            nn::score_in_batches(model, {sources[i]}, {phonemes.encode(c.phonemes)}, g)[0];
        EXPECT_NEAR(c.model_log_prob, scored, 1e-4);
      }
      const auto known = ngram.log_prob(spellings[i], c.phonemes);
      EXPECT_EQ(c.ngram_log_prob, known ? *known : kNegInf);
    }
  }
  // The n-gram's guesses are all there for a word it can spell.
  for (const ScoredPronunciation& guess : ngram.pronounce("cab", 3)) {
    bool found = false;
    for (const auto& c : lists[0]) found |= c.phonemes == guess.phonemes;
    EXPECT_TRUE(found);
  }
  EXPECT_SG_ERROR(pronunciation_candidates(model, sources, {"cab"}, phonemes, g, ngram, {}),
                  "pronunciation_candidates: 3 sources but 1 spellings");
}

}  // namespace
}  // namespace sg::data
