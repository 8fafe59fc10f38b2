// Two G2P systems on the same words, side by side: which words each gets right that the other
// gets wrong, and where those words are, by length and by how familiar their letters are.
//
// A WER says how often a system is wrong, not where. Two systems with close WERs can be wrong on
// different words (then combining them pays: the oracle WER, a word wrong only when both are, is
// the bound of what any choice between them can reach), or one can be right wherever the other is
// (then nothing from it helps). The groups say which kinds of word the difference comes from:
//   - by length: a model that drifts on long words loses there;
//   - by letter context: each word's rarest letter trigram ("^" and "$" mark its ends), counted
//     over the training spellings; a word with a trigram training never had asks a system to
//     generalise, one whose every trigram is common asks it to remember.
//   SystemComparison c = compare_systems(test_words, model_predictions, ngram_predictions,
//                                        train_words);
//   fmt::print("{}", describe(c, "model", "n-gram"));
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "nn/data/mistake_kinds.h"
#include "nn/data/pronouncing_dictionary.h"

namespace sg::data {

// How two systems fare on a set of words: a word is right when its prediction equals one of its
// pronunciations.
struct Agreement {
  int64_t words = 0, both_right = 0, only_first = 0, only_second = 0, both_wrong = 0;

  double wer_first() const;   // (only_second + both_wrong) / words; 0 without words
  double wer_second() const;  // (only_first + both_wrong) / words
  double oracle_wer() const;  // both_wrong / words: the best any choice between them can do
};

// One group of words (a length, a context frequency): the agreement with stress scored and with
// it dropped on both sides (without_stress).
struct AgreementGroup {
  std::string label;  // "5-6 letters", "rarest trigram seen 1-9 times"
  Agreement with_stress, without_stress;
};

// The letter trigrams of training spellings, each word's "^" + spelling + "$" counted once per
// word: how familiar a word's letter contexts are.
class LetterContexts {
 public:
  explicit LetterContexts(const std::vector<DictionaryWord>& training);
  // The count of the word's least frequent trigram (0 when one never occurred in training).
  int64_t rarest(const std::string& spelling) const;

 private:
  std::unordered_map<std::string, int64_t> counts_;
};

struct SystemComparison {
  AgreementGroup all;
  std::vector<AgreementGroup> by_length;  // only groups that have words
  // Empty when no training words were given.
  std::vector<AgreementGroup> by_context;
  // Each system's wrong words by kind (stress only, vowels, a consonant), with stress scored.
  MistakeKinds first_kinds, second_kinds;
};

// first[i] and second[i] are the two systems' predictions for words[i] (an empty prediction is
// wrong). `training` (may be empty) gives the letter contexts. A size mismatch is an error naming
// the sizes.
SystemComparison compare_systems(const std::vector<DictionaryWord>& words,
                                 const std::vector<std::vector<std::string>>& first,
                                 const std::vector<std::vector<std::string>>& second,
                                 const std::vector<DictionaryWord>& training);

// A table per scoring (with stress, without): for each group its words, each system's WER, the
// words only one gets right, and the oracle WER; then each system's wrong words by kind.
std::string describe(const SystemComparison& comparison, const std::string& first_name,
                     const std::string& second_name);

}  // namespace sg::data
