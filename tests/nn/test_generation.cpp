// nn/generation.h: greedy search, beam search and sampling, on a model whose probabilities are
// set by hand and on a small Transformer (cached and uncached).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "autograd/factory.h"
#include "autograd/generator.h"
#include "nn/generation.h"
#include "nn/transformer.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

// Tokens of the hand-set model: 0 pad, 1 bos, 2 eos, 3 "A", 4 "B".
constexpr int64_t kEos = 2, kA = 3, kB = 4;

// P(next | prefix) set by hand, so that greedy and beam search disagree:
//   after <bos>:   A 0.6, B 0.4
//   after A:       <eos> 0.5, A 0.25, B 0.25    ->  P(A <eos>) = 0.30 (greedy's pick)
//   after B:       <eos> 0.9, A 0.05, B 0.05    ->  P(B <eos>) = 0.36 (the most probable)
//   longer:        <eos> 1
// A source row starting with 1 swaps A and B, so a batch holds different problems.
class HandSetModel : public Seq2SeqModel {
 public:
  class State : public DecodingState {
   public:
    explicit State(std::vector<bool> swapped)
        : swapped_(std::move(swapped)), prefixes_(swapped_.size()) {}
    Tensor step(const std::vector<int64_t>& tokens) override {
      std::vector<float> logits;
      for (size_t r = 0; r < tokens.size(); ++r) {
        prefixes_[r].push_back(tokens[r]);
        std::vector<double> p(5, 1e-12);
        auto flip = [&](int64_t t) { return swapped_[r] && t >= kA ? kA + kB - t : t; };
        const auto& prefix = prefixes_[r];
        if (prefix.size() == 1) {
          p[flip(kA)] = 0.6, p[flip(kB)] = 0.4;
        } else if (prefix.size() == 2 && flip(prefix[1]) == kA) {
          p[kEos] = 0.5, p[flip(kA)] = 0.25, p[flip(kB)] = 0.25;
        } else if (prefix.size() == 2 && flip(prefix[1]) == kB) {
          p[kEos] = 0.9, p[flip(kA)] = 0.05, p[flip(kB)] = 0.05;
        } else {
          p[kEos] = 1.0;
        }
        for (double q : p) logits.push_back(static_cast<float>(std::log(q)));
      }
      return from_vector(logits, {static_cast<int64_t>(tokens.size()), 5});
    }
    void reorder(const std::vector<int64_t>& rows) override {
      std::vector<bool> s;
      std::vector<std::vector<int64_t>> p;
      for (int64_t r : rows) s.push_back(swapped_[r]), p.push_back(prefixes_[r]);
      swapped_ = s, prefixes_ = p;
    }

   private:
    std::vector<bool> swapped_;
    std::vector<std::vector<int64_t>> prefixes_;
  };

  std::unique_ptr<DecodingState> start_generation(const Tensor& src, bool) override {
    std::vector<bool> swapped;
    auto values = src.to_vector<int64_t>();
    for (int64_t b = 0; b < src.size(0); ++b) swapped.push_back(values[b * src.size(1)] == 1);
    return std::make_unique<State>(swapped);
  }
};

GenerationOptions hand_options() { return {.max_length = 5, .bos = 1, .eos = kEos, .pad = 0}; }

TEST(Generation, BeamFindsWhatGreedyMisses) {
  HandSetModel model;
  Tensor src = from_vector<int64_t>({0, 1}, {2, 1});  // row 1 swaps A and B
  auto greedy = greedy_search(model, src, hand_options());
  EXPECT_EQ(greedy, (std::vector<std::vector<int64_t>>{{kA}, {kB}}));
  auto beams = beam_search(model, src, hand_options(), {.beam_size = 2, .length_penalty = 0.0});
  ASSERT_EQ(beams.size(), 2u);
  EXPECT_EQ(beams[0][0].tokens, (std::vector<int64_t>{kB}));
  EXPECT_NEAR(beams[0][0].log_prob, std::log(0.36), 1e-6);
  EXPECT_EQ(beams[0][1].tokens, (std::vector<int64_t>{kA}));
  EXPECT_NEAR(beams[0][1].log_prob, std::log(0.30), 1e-6);
  EXPECT_EQ(beams[1][0].tokens, (std::vector<int64_t>{kA}));  // the swapped row
  // Width 1 is greedy.
  auto width1 = beam_search(model, src, hand_options(), {.beam_size = 1});
  EXPECT_EQ(width1[0][0].tokens, greedy[0]);
  EXPECT_EQ(width1[1][0].tokens, greedy[1]);
}

TEST(Generation, LengthPenaltyRanksByMeanLogProbability) {
  HandSetModel model;
  Tensor src = from_vector<int64_t>({0}, {1, 1});
  auto beams = beam_search(model, src, hand_options(), {.beam_size = 3, .length_penalty = 1.0});
  for (const auto& h : beams[0])
    EXPECT_NEAR(h.score, h.log_prob / static_cast<double>(h.tokens.size() + 1), 1e-12);
  for (size_t i = 1; i < beams[0].size(); ++i) EXPECT_GE(beams[0][i - 1].score, beams[0][i].score);
}

TEST(Generation, SamplingFollowsTheProbabilities) {
  HandSetModel model;
  Tensor src = from_vector<int64_t>({0}, {1, 1});
  std::map<std::vector<int64_t>, int> counts;
  for (uint64_t seed = 0; seed < 400; ++seed)
    ++counts[sample(model, src, hand_options(), {.temperature = 1.0, .seed = seed})[0]];
  // P(A <eos>) = 0.30, P(B <eos>) = 0.36: 120 and 144 of 400 expected; 4 standard deviations.
  EXPECT_NEAR(counts[{kA}], 120, 37);
  EXPECT_NEAR(counts[{kB}], 144, 39);
  // top_k = 1 is greedy whatever the seed.
  for (uint64_t seed = 0; seed < 20; ++seed)
    EXPECT_EQ(sample(model, src, hand_options(), {.top_k = 1, .seed = seed})[0],
              std::vector<int64_t>{kA});
}

// suppress, min_length and force_eos_at_max_length hold in every search: greedy, sampling, beam.
TEST(Generation, ForbiddenTokensAreNeverGenerated) {
  HandSetModel model;
  Tensor src = from_vector<int64_t>({0}, {1, 1});
  GenerationOptions no_a = hand_options();
  no_a.suppress = {kA};
  EXPECT_EQ(greedy_search(model, src, no_a)[0], std::vector<int64_t>{kB});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<int64_t> drawn = sample(model, src, no_a, {.seed = seed})[0];
    EXPECT_EQ(std::count(drawn.begin(), drawn.end(), kA), 0);
  }
  const auto beams = beam_search(model, src, no_a, {.beam_size = 3});
  for (const Hypothesis& h : beams[0])
    EXPECT_EQ(std::count(h.tokens.begin(), h.tokens.end(), kA), 0);
  // <eos> after A is forbidden at the second step: A, then A (first of the tied 0.25s), then <eos>.
  GenerationOptions two = hand_options();
  two.min_length = 2;
  EXPECT_EQ(greedy_search(model, src, two)[0], (std::vector<int64_t>{kA, kA}));
  const auto long_beams = beam_search(model, src, two, {.beam_size = 3});
  for (const Hypothesis& h : long_beams[0]) EXPECT_GE(h.tokens.size(), 2u);
  // One token at most and it is <eos>: every output is empty, not cut off.
  GenerationOptions one = hand_options();
  one.max_length = 1;
  EXPECT_EQ(greedy_search(model, src, one)[0], std::vector<int64_t>{kA});  // cut off
  one.force_eos_at_max_length = true;
  EXPECT_TRUE(greedy_search(model, src, one)[0].empty());
  EXPECT_TRUE(sample(model, src, one, {.seed = 3})[0].empty());
  EXPECT_TRUE(beam_search(model, src, one, {.beam_size = 2})[0].front().tokens.empty());
}

// Options that leave nothing to choose at some step: greedy search chose a suppressed token (or
// -1 with a one-token vocabulary), and beam search found no hypothesis, which
// generate_in_batches then read past (a segfault). Every search now refuses, naming the step.
TEST(Generation, OptionsThatForbidEveryTokenAreRefused) {
  HandSetModel model;
  Tensor src = from_vector<int64_t>({0}, {1, 1});
  GenerationOptions none = hand_options();  // pad 0; bos 1 suppressed too; eos before min_length
  none.suppress = {1, kA, kB};
  none.min_length = 1;
  const std::string why = "generation: at step 0 every token of the vocabulary of 5 is forbidden";
  EXPECT_SG_ERROR(greedy_search(model, src, none), why);
  EXPECT_SG_ERROR(sample(model, src, none, {.seed = 1}), why);
  EXPECT_SG_ERROR(beam_search(model, src, none, {.beam_size = 2}), why);
  // Allowed again from step 1 on (eos after min_length): nothing to refuse with min_length 0.
  none.min_length = 0;
  EXPECT_TRUE(greedy_search(model, src, none)[0].empty());
  EXPECT_TRUE(beam_search(model, src, none, {.beam_size = 2})[0].front().tokens.empty());
}

TEST(Generation, RejectsBadOptions) {
  HandSetModel model;
  Tensor src = from_vector<int64_t>({0}, {1, 1});
  EXPECT_SG_ERROR(beam_search(model, src, hand_options(), {.beam_size = 0}), "beam_size");
  EXPECT_SG_ERROR(sample(model, src, hand_options(), {.temperature = 0.0}), "temperature");
  EXPECT_SG_ERROR(sample(model, src, hand_options(), {.top_k = -1}), "top_k");
  EXPECT_SG_ERROR(greedy_search(model, src, {.max_length = 0}), "max_length");
  GenerationOptions bad = hand_options();
  bad.min_length = 5;
  EXPECT_SG_ERROR(greedy_search(model, src, bad), "min_length must be in [0, max_length 5), got 5");
  bad = hand_options(), bad.suppress = {kEos};
  EXPECT_SG_ERROR(greedy_search(model, src, bad), "which is not a token id other than eos");
  bad = hand_options(), bad.suppress = {7};
  EXPECT_SG_ERROR(greedy_search(model, src, bad), "suppress holds 7, outside the vocabulary of 5");
  EXPECT_SG_ERROR(greedy_search(model, from_vector<int64_t>({0}, {1}), hand_options()),
                  "src must be [B, S]");
  // A beam of 2^40 hypotheses is a mistake to name, not rows to allocate (std::bad_alloc before).
  EXPECT_SG_ERROR(beam_search(model, src, hand_options(), {.beam_size = int64_t{1} << 40}),
                  "beam_search: beam_size must be in [1, 4096], got 1099511627776");
}

TEST(Generation, PrefixesRefuseRowsTheyDoNotHave) {
  // No rows, or a reorder naming a row that is not there: an error, not a read past the end.
  EXPECT_SG_ERROR(Prefixes(0), "generation: Prefixes needs at least one row, got 0");
  EXPECT_SG_ERROR(Prefixes(-1), "generation: Prefixes needs at least one row, got -1");
  Prefixes p(2);
  EXPECT_EQ(p.append({1, 1}, kCPU).shape(), (Shape{2, 1}));
  EXPECT_SG_ERROR(p.reorder({0, 5}), "generation: reorder names row 5 of 2 rows");
  p.reorder({});
  EXPECT_SG_ERROR(p.append({}, kCPU), "generation: no rows to append to");
  Prefixes q(2);
  q.append({3, 4}, kCPU);
  q.reorder({1, 1, 0});
  EXPECT_EQ(q.append({5, 6, 7}, kCPU).to_vector<int64_t>(),
            (std::vector<int64_t>{4, 5, 4, 6, 3, 7}));
}

// A small random Transformer. Its <eos> logit is lowered and its logits sharpened (the output
// layer's weight ×3), so that sequences have several tokens and greedy, beam and sampling take
// different paths: the equalities below would mean little on empty sequences.
class GenerationTransformer : public ::testing::Test {
 protected:
  void SetUp() override {
    manual_seed(22);
    TransformerOptions o;
    o.src_vocab = 9, o.tgt_vocab = 7;
    o.d_model = 16, o.heads = 2, o.d_ff = 32, o.max_len = 16, o.dropout = 0.0;
    o.num_encoder_layers = o.num_decoder_layers = 2;
    model = std::make_unique<Transformer>(o);
    model->eval();
    NoGradGuard no_grad;
    model->generator->bias.narrow(0, 2, 1).fill_(-5.0);
    model->generator->weight.mul_(3.0);
    src = from_vector<int64_t>({3, 4, 5, 6, 7, 8, 4, 3, 0, 0, 5, 5, 5, 0, 0}, {3, 5});
  }
  GenerationOptions options(bool cache) {
    return {.max_length = 10, .bos = 1, .eos = 2, .pad = 0, .use_cache = cache};
  }
  std::unique_ptr<Transformer> model;
  Tensor src;
};

TEST_F(GenerationTransformer, CachedEqualsUncached) {
  EXPECT_EQ(greedy_search(*model, src, options(true)), greedy_search(*model, src, options(false)));
  auto cached = beam_search(*model, src, options(true), {.beam_size = 3});
  auto full = beam_search(*model, src, options(false), {.beam_size = 3});
  ASSERT_EQ(cached.size(), full.size());
  for (size_t b = 0; b < cached.size(); ++b) {
    ASSERT_EQ(cached[b].size(), full[b].size());
    for (size_t k = 0; k < cached[b].size(); ++k) {
      EXPECT_EQ(cached[b][k].tokens, full[b][k].tokens);
      EXPECT_NEAR(cached[b][k].log_prob, full[b][k].log_prob, 1e-4);
    }
  }
}

TEST_F(GenerationTransformer, BeamWidthOneIsGreedyAndBatchesAreIndependent) {
  auto greedy = greedy_search(*model, src, options(true));
  for (const auto& tokens : greedy) EXPECT_GE(tokens.size(), 4u);
  auto width1 = beam_search(*model, src, options(true), {.beam_size = 1});
  auto width4 = beam_search(*model, src, options(true), {.beam_size = 4});
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_EQ(width1[b][0].tokens, greedy[b]);
    // One source alone gives what it gives in the batch.
    Tensor one = src.narrow(0, b, 1).contiguous();
    EXPECT_EQ(greedy_search(*model, one, options(true))[0], greedy[b]);
    auto alone = beam_search(*model, one, options(true), {.beam_size = 4});
    EXPECT_EQ(alone[0][0].tokens, width4[b][0].tokens);
    // Best first.
    for (size_t k = 1; k < width4[b].size(); ++k)
      EXPECT_GE(width4[b][k - 1].score, width4[b][k].score);
  }
  // And on this model it finds a different sequence than greedy for some source.
  bool differs = false;
  for (int64_t b = 0; b < 3; ++b) differs |= width4[b][0].tokens != greedy[b];
  EXPECT_TRUE(differs);
}

TEST_F(GenerationTransformer, SamplingSeededAndColdIsGreedy) {
  auto greedy = greedy_search(*model, src, options(true));
  EXPECT_EQ(sample(*model, src, options(true), {.temperature = 1e-6, .seed = 5}), greedy);
  auto a = sample(*model, src, options(true), {.temperature = 1.5, .seed = 7});
  auto b = sample(*model, src, options(true), {.temperature = 1.5, .seed = 7});
  EXPECT_EQ(a, b);
  bool differs = false;  // some seed draws another sequence than greedy at temperature 1.5
  for (uint64_t seed = 0; seed < 10 && !differs; ++seed)
    differs = sample(*model, src, options(true), {.temperature = 1.5, .seed = seed}) != greedy;
  EXPECT_TRUE(differs);
}

// generate_in_batches pads each batch to its own longest source: the same sequences as one search
// over the whole padded batch, whatever the batch size, greedy and beam alike.
TEST_F(GenerationTransformer, GenerateInBatchesEqualsOneSearch) {
  const std::vector<std::vector<int64_t>> sources = {{3, 4, 5, 6, 7}, {8, 4, 3}, {5, 5, 5}};
  const auto greedy = greedy_search(*model, src, options(true));
  const auto beams = beam_search(*model, src, options(true), {.beam_size = 4});
  for (int64_t batch : {1, 2, 128}) {
    EXPECT_EQ(generate_in_batches(*model, sources, options(true), {.beam_size = 1}, batch), greedy)
        << batch;
    const auto best = generate_in_batches(*model, sources, options(true), {.beam_size = 4}, batch);
    ASSERT_EQ(best.size(), 3u);
    for (size_t b = 0; b < 3; ++b) EXPECT_EQ(best[b], beams[b][0].tokens) << batch;
  }
  EXPECT_TRUE(generate_in_batches(*model, {}, options(true)).empty());
  EXPECT_SG_ERROR(generate_in_batches(*model, sources, options(true), {.beam_size = 1}, 0),
                  "generate_in_batches: batch_size must be positive, got 0");
  EXPECT_SG_ERROR(generate_in_batches(*model, {{3}, {}}, options(true)),
                  "generate_in_batches: source 1 is empty");
  GenerationOptions no_pad = options(true);
  no_pad.pad = -1;
  EXPECT_SG_ERROR(generate_in_batches(*model, sources, no_pad), "pad must be a token id");
}

// The n-best of each source, batched, is beam_search's; and scoring a hypothesis's tokens gives
// the log-probability the search gave it, whatever the batch size, cached or not.
TEST_F(GenerationTransformer, ScoreInBatchesGivesBeamSearchsLogProbabilities) {
  const std::vector<std::vector<int64_t>> sources = {{3, 4, 5, 6, 7}, {8, 4, 3}, {5, 5, 5}};
  const auto beams = beam_search(*model, src, options(true), {.beam_size = 4});
  std::vector<std::vector<int64_t>> scored_sources, targets;
  std::vector<double> expected;
  for (size_t b = 0; b < 3; ++b)
    for (const Hypothesis& h : beams[b]) {
      if (h.tokens.size() >= 10) continue;  // stopped at max_length, without <eos>
      scored_sources.push_back(sources[b]);
      targets.push_back(h.tokens);
      expected.push_back(h.log_prob);
    }
  ASSERT_GE(targets.size(), 6u);
  for (int64_t batch : {1, 5, 128}) {
    const auto nbest =
        beam_search_in_batches(*model, sources, options(true), {.beam_size = 4}, batch);
    ASSERT_EQ(nbest.size(), 3u);
    for (size_t b = 0; b < 3; ++b) {
      ASSERT_EQ(nbest[b].size(), beams[b].size());
      for (size_t k = 0; k < beams[b].size(); ++k)
        EXPECT_EQ(nbest[b][k].tokens, beams[b][k].tokens);
    }
    for (bool cache : {true, false}) {
      const auto got = score_in_batches(*model, scored_sources, targets, options(cache), batch);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], expected[i], 1e-4) << "batch " << batch << ", pair " << i;
    }
  }
  // An empty target is <eos> alone; a likelier sequence scores higher than an unlikely one.
  const auto lone = score_in_batches(*model, {sources[0]}, {{}}, options(true));
  EXPECT_LT(lone[0], 0.0);
  EXPECT_SG_ERROR(score_in_batches(*model, sources, {{3}}, options(true)),
                  "score_in_batches: 3 sources but 1 targets");
  EXPECT_SG_ERROR(
      score_in_batches(*model, {sources[0]}, {{3, 7}}, options(true)),
      "sequence_log_probs: row 0 of the batch has target token 7, outside the model's 0..6");
  // Without a pad token (pad -1) a row past its end was fed -1, which the embedding refused; it
  // is fed bos now, whose output is ignored as pad's is.
  GenerationOptions no_pad = options(true);
  no_pad.pad = -1;
  const Tensor two = src.narrow(0, 0, 2);
  const std::vector<std::vector<int64_t>> ragged = {{3}, {3, 4, 5}};
  const auto with_pad = sequence_log_probs(*model, two, ragged, options(true));
  const auto without = sequence_log_probs(*model, two, ragged, no_pad);
  for (size_t r = 0; r < 2; ++r) EXPECT_NEAR(without[r], with_pad[r], 1e-5) << "row " << r;
}

}  // namespace
}  // namespace sg::nn
