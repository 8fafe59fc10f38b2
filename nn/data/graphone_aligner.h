// Letters aligned to phonemes in small chunks, learnt from the dictionary itself: the first half
// of a joint-sequence G2P model (Bisani and Ney, 2008; Phonetisaurus' aligner, Jiampojamarn et
// al., 2007).
//
// A dictionary pairs a spelling with its phonemes but never says which letters make which sound.
// An alignment cuts both into the same number of chunks, "graphones":
//   phoenix  ->  ph|F  oe|IY1  n|N  i|IH0  x|K S
// Each chunk is one or two letters to no phoneme (the silent "e" of "cake"), one letter to one or
// two phonemes (the "x" above), or two letters to one ("ph" -> F). Which cut is right is learnt
// by expectation-maximisation over every word: start with short chunks likely and silent letters
// nearly impossible (a prior; Phonetisaurus' aligner starts so, and so does this); in each word,
// weigh every possible cut by the product of its chunks' probabilities (forward-backward over the
// grid of letter and phoneme positions) and count each chunk by the weight of the cuts that use
// it; make the probabilities the normalised counts; repeat. Then each word's most probable cut
// (Viterbi, each chunk's log-probability weighed by its length, so that of two about equally
// likely cuts the one of shorter chunks wins) is its alignment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sg::data {

struct Graphone {
  std::string letters;                // one or two
  std::vector<std::string> phonemes;  // none, one or two
  bool operator==(const Graphone&) const = default;
};

// "ph|F", "x|K S", "e|": a graphone as one token.
std::string to_string(const Graphone& g);

using SpelledPronunciation = std::pair<std::string, std::vector<std::string>>;

class GraphoneAligner {
 public:
  // Learns the chunks' probabilities from the pairs in `iterations` rounds of EM. A pair no cut
  // fits (more than two phonemes per letter, or an empty side) is left out and counted
  // (unalignable()). Throws when no pair fits, or iterations < 1.
  GraphoneAligner(const std::vector<SpelledPronunciation>& pairs, int iterations);

  // The most probable cut of a pair, or nothing when no cut fits it.
  std::optional<std::vector<Graphone>> align(const std::string& spelling,
                                             const std::vector<std::string>& phonemes) const;

  int64_t unalignable() const { return unalignable_; }
  // The probability EM gave a chunk (0 for one it never saw).
  double probability(const Graphone& g) const;

 private:
  void normalize(const std::vector<double>& counts);  // probabilities_ = counts / their sum

  std::unordered_map<std::string, int32_t> ids_;  // to_string(graphone) -> index
  std::vector<double> probabilities_;
  int64_t unalignable_ = 0;
};

}  // namespace sg::data
