// A joint-sequence G2P model (Bisani and Ney, 2008; what Phonetisaurus builds): an n-gram over
// graphones. Training aligns every dictionary pair into graphones (GraphoneAligner) and counts
// them as sentences of an NgramModel; pronouncing a word searches the cuts of its spelling into
// letter chunks and, for each chunk, the graphones training saw with it, for the sequence the
// n-gram finds most probable:
//   P(phoenix, F IY1 N IH0 K S) ~ P(ph|F) P(oe|IY1 | ph|F) P(n|N | ph|F oe|IY1) ...
// It knows letter contexts up to order-1 graphones back and nothing further: what a
// Transformer's attention can reach, it cannot, and what it has seen it remembers exactly.
//
//   JointSequenceG2p ngram(train_words, {.order = 8});
//   auto best = ngram.pronounce("tensor", 5);          // 5-best, most probable first
//   double lp = ngram.log_prob("tensor", {"T", "EH1", "N", "S", "ER0"});
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "nn/data/graphone_aligner.h"
#include "nn/data/ngram_model.h"
#include "nn/data/pronouncing_dictionary.h"

namespace sg::data {

struct JointSequenceOptions {
  int order = 8;        // of the graphone n-gram (Phonetisaurus' best on this dictionary's dev)
  int iterations = 12;  // rounds of EM for the alignment (Phonetisaurus: 11 and a last)
  int64_t beam = 64;    // partial pronunciations kept per letter position in the search
};

struct ScoredPronunciation {
  std::vector<std::string> phonemes;
  double log_prob = 0;  // of the spelling and these phonemes together, natural log
};

class JointSequenceG2p {
 public:
  // Trains on every pronunciation of every word. Throws on options out of range or when no pair
  // can be aligned.
  JointSequenceG2p(const std::vector<DictionaryWord>& training, JointSequenceOptions options);

  // The `n` most probable different pronunciations of a lower-case spelling, best first; empty
  // when no cut of it has chunks training saw (a letter never seen).
  std::vector<ScoredPronunciation> pronounce(const std::string& spelling, int64_t n = 1) const;
  // log P(spelling, phonemes) of the best cut the search finds; nothing when no cut of both into
  // known graphones exists.
  std::optional<double> log_prob(const std::string& spelling,
                                 const std::vector<std::string>& phonemes) const;

  int64_t graphones() const { return static_cast<int64_t>(graphones_.size()); }
  // Training pairs left out: no alignment (GraphoneAligner::unalignable).
  int64_t unaligned_pairs() const { return unaligned_; }

 private:
  std::vector<ScoredPronunciation> search(const std::string& spelling,
                                          const std::vector<std::string>* target, int64_t n) const;

  JointSequenceOptions options_;
  std::vector<Graphone> graphones_;  // token id -> graphone
  // A letter chunk -> the tokens of the graphones training saw with it.
  std::unordered_map<std::string, std::vector<int32_t>> by_letters_;
  std::unique_ptr<NgramModel> ngram_;
  int64_t unaligned_ = 0;
};

}  // namespace sg::data
