#include "nn/data/pronunciation_candidates.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/error.h"

namespace sg::data {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

bool in_vocabulary(const std::vector<std::string>& phonemes, const Vocabulary& vocabulary) {
  return std::all_of(phonemes.begin(), phonemes.end(),
                     [&](const std::string& p) { return vocabulary.contains(p); });
}

}  // namespace

std::vector<std::vector<PronunciationCandidate>> pronunciation_candidates(
    nn::Seq2SeqModel& model, const std::vector<std::vector<int64_t>>& sources,
    const std::vector<std::string>& spellings, const Vocabulary& phonemes,
    const nn::GenerationOptions& generation, const JointSequenceG2p& ngram,
    const CandidateOptions& options) {
  SG_CHECK(sources.size() == spellings.size(),
           "pronunciation_candidates: {} sources but {} spellings", sources.size(),
           spellings.size());
  SG_CHECK(options.ngram_nbest >= 1,
           "pronunciation_candidates: ngram_nbest must be at least 1, "
           "got {}",
           options.ngram_nbest);
  const auto nbest = nn::beam_search_in_batches(
      model, sources, generation,
      {.beam_size = options.beam_size, .length_penalty = options.length_penalty},
      options.batch_size);
  std::vector<std::vector<PronunciationCandidate>> out(sources.size());
  // The n-gram's guesses the model did not make, to be scored by the model in one batched pass.
  std::vector<std::vector<int64_t>> extra_sources, extra_targets;
  std::vector<PronunciationCandidate*> extra;
  for (size_t i = 0; i < sources.size(); ++i) {
    for (const nn::Hypothesis& h : nbest[i]) {
      std::vector<std::string> said = phonemes.decode(h.tokens);
      const auto known = ngram.log_prob(spellings[i], said);
      out[i].push_back({std::move(said), h.log_prob, known ? *known : kNegInf});
    }
    for (const ScoredPronunciation& guess : ngram.pronounce(spellings[i], options.ngram_nbest)) {
      const bool made = std::any_of(out[i].begin(), out[i].end(),
                                    [&](const auto& c) { return c.phonemes == guess.phonemes; });
      if (!made) out[i].push_back({guess.phonemes, kNegInf, guess.log_prob});
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    for (PronunciationCandidate& c : out[i])  // out is complete: the pointers stay valid
      if (c.model_log_prob == kNegInf && in_vocabulary(c.phonemes, phonemes)) {
        extra.push_back(&c);
        extra_sources.push_back(sources[i]);
        extra_targets.push_back(phonemes.encode(c.phonemes));
      }
  const std::vector<double> scores =
      nn::score_in_batches(model, extra_sources, extra_targets, generation, options.batch_size);
  for (size_t e = 0; e < extra.size(); ++e) extra[e]->model_log_prob = scores[e];
  return out;
}

const std::vector<std::string>& choose_pronunciation(
    const std::vector<PronunciationCandidate>& candidates, double ngram_weight,
    double length_penalty) {
  SG_CHECK(!candidates.empty(), "choose_pronunciation: no candidates");
  SG_CHECK(ngram_weight >= 0 && std::isfinite(ngram_weight),
           "choose_pronunciation: ngram_weight must be >= 0, got {}", ngram_weight);
  const PronunciationCandidate* best = &candidates.front();
  double best_score = kNegInf;
  for (const PronunciationCandidate& c : candidates) {
    const double ngram = ngram_weight == 0 ? 0.0 : ngram_weight * c.ngram_log_prob;
    const double length = static_cast<double>(c.phonemes.size() + 1);
    const double score = (c.model_log_prob + ngram) / std::pow(length, length_penalty);
    if (score > best_score) {
      best_score = score;
      best = &c;
    }
  }
  return best->phonemes;
}

std::vector<std::vector<std::string>> choose_pronunciations(
    const std::vector<std::vector<PronunciationCandidate>>& lists, double ngram_weight,
    double length_penalty) {
  std::vector<std::vector<std::string>> chosen;
  chosen.reserve(lists.size());
  for (const auto& list : lists)
    chosen.push_back(choose_pronunciation(list, ngram_weight, length_penalty));
  return chosen;
}

}  // namespace sg::data
