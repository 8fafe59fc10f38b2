// Word and phoneme error rates, the two numbers grapheme-to-phoneme results are reported in.
//   WER: the share of words whose predicted pronunciation is wrong. A word with several correct
//        pronunciations ("read": R EH1 D, R IY1 D) is right when the prediction equals any one.
//   PER: phoneme edits (substitutions, insertions, deletions: the Levenshtein distance) divided
//        by the reference phonemes, each word scored against its closest reference.
//   sg::data::ErrorRates rates;
//   rates.add({"R", "IY1", "D"}, {{"R", "EH1", "D"}, {"R", "IY1", "D"}});   // right
//   rates.wer(), rates.per();
// Scoring without stress (without_stress on both sides) counts only which sounds were predicted:
// "R IY0 D" for "R IY1 D" is then right.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sg::data {

// The fewest substitutions, insertions and deletions that turn `a` into `b`.
int64_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b);

// The phonemes with their trailing stress digits dropped: {"T", "EH1", "N"} -> {"T", "EH", "N"}.
std::vector<std::string> without_stress(const std::vector<std::string>& phonemes);

class ErrorRates {
 public:
  // One word: its predicted pronunciation and all its reference pronunciations (at least one).
  void add(const std::vector<std::string>& predicted,
           const std::vector<std::vector<std::string>>& references);

  int64_t words() const { return words_; }
  int64_t wrong_words() const { return wrong_words_; }
  int64_t phoneme_edits() const { return phoneme_edits_; }
  int64_t reference_phonemes() const { return reference_phonemes_; }
  double wer() const;  // in [0, 1]; 0 when no word was added
  double per() const;  // can exceed 1 when predictions are much longer than the references

 private:
  int64_t words_ = 0, wrong_words_ = 0, phoneme_edits_ = 0, reference_phonemes_ = 0;
};

}  // namespace sg::data
