// Two G2P systems' guesses for each word, each guess scored by both, and the choice between them:
// the Transformer's beam n-best and the joint-sequence n-gram's n-best (JointSequenceG2p), ranked
// by the model's log-probability plus a weighted share of the n-gram's.
//
// Why it pays: the two are wrong on different words (g2p compare: the oracle WER, a word wrong
// only when both are, is far below either system's). The n-gram remembers exact letter contexts
// it saw; the Transformer generalises over the whole word. A word where the model's best is
// unusual for its letters gets a low n-gram score, and a close second of the model's that the
// n-gram likes can win.
//   auto lists = pronunciation_candidates(model, sources, spellings, phonemes, generation, ngram,
//                                         {.beam_size = 5});
//   auto best = choose_pronunciation(lists[i], /*ngram_weight=*/0.5, /*length_penalty=*/0.6);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/data/joint_sequence_g2p.h"
#include "nn/data/vocabulary.h"
#include "nn/generation.h"

namespace sg::data {

struct PronunciationCandidate {
  std::vector<std::string> phonemes;
  double model_log_prob = 0;  // log P(phonemes, <eos> | spelling) under the model
  double ngram_log_prob = 0;  // log P(spelling, phonemes) under the n-gram; -inf: no cut has it
};

struct CandidateOptions {
  int64_t beam_size = 5;        // the model's beam search
  double length_penalty = 1.0;  // of the beam search's ranking (BeamSearchOptions)
  int64_t ngram_nbest = 5;      // the n-gram's n-best
  int64_t batch_size = 128;     // sources per batch of the model's searches
};

// For word i (sources[i] its letter ids for the model, spellings[i] its letters for the n-gram):
// the model's n-best, then the n-gram's guesses not among them, each scored by both. A guess with
// a phoneme the model's vocabulary lacks gets model_log_prob -inf. Throws on sizes that differ.
std::vector<std::vector<PronunciationCandidate>> pronunciation_candidates(
    nn::Seq2SeqModel& model, const std::vector<std::vector<int64_t>>& sources,
    const std::vector<std::string>& spellings, const Vocabulary& phonemes,
    const nn::GenerationOptions& generation, const JointSequenceG2p& ngram,
    const CandidateOptions& options);

// The candidate with the highest (model_log_prob + ngram_weight * ngram_log_prob) /
// length^length_penalty (length: phonemes and <eos>, as the beam search ranks). Weight 0 ranks by
// the model alone, over both lists. A candidate the n-gram cannot produce ranks last when the
// weight is positive; when no candidate has a finite score, the first (the model's best).
// Throws on an empty list or a negative weight.
const std::vector<std::string>& choose_pronunciation(
    const std::vector<PronunciationCandidate>& candidates, double ngram_weight,
    double length_penalty);
// choose_pronunciation for every word's list.
std::vector<std::vector<std::string>> choose_pronunciations(
    const std::vector<std::vector<PronunciationCandidate>>& lists, double ngram_weight,
    double length_penalty);

}  // namespace sg::data
