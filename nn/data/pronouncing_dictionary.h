// A pronouncing dictionary by word, and another system's pronunciations scored against it.
//
// read_cmudict gives one entry per line; a G2P model is trained and judged per word, and a word
// may have several right pronunciations ("read": R EH1 D, R IY1 D). So:
//   std::vector<DictionaryWord> words = read_dictionary_words("test.dict");   // grouped by word
//   Comparison c = compare_predictions("test.dict", "test.predicted");        // another system's
//   PronunciationScores s = score_pronunciations(c.words, c.predicted);       // WER, PER, ...
// One scoring rule for every system: a model's predictions and another tool's are scored by
// score_pronunciations, so the two results agree to the last digit (chapter 12b).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "nn/data/cmudict.h"

namespace sg::data {

struct DictionaryWord {
  std::string spelling;                                  // lower case
  std::vector<std::vector<std::string>> pronunciations;  // in the dictionary's order
};

// A word as the dictionary writes it: lower case. Throws on an empty word.
std::string lowercase_word(const std::string& word);

// The entries grouped by word: words in the order they first appear, each word's pronunciations
// in file order ("read R EH1 D", "read(2) R IY1 D" -> one word with two).
std::vector<DictionaryWord> group_by_word(std::vector<Pronunciation> entries);

// A dictionary file (cmudict format) by word, words lower-cased. A missing, empty or malformed
// file is an error naming it (and the line).
std::vector<DictionaryWord> read_dictionary_words(const std::string& path);

// The words as the dictionary writes them, one line per pronunciation: "read R EH1 D", then
// "read(2) R IY1 D".
std::string to_cmudict(const std::vector<DictionaryWord>& words);

// Another system's predictions, one pronunciation per word (lower-cased). A line is a dictionary
// line, "word P H ONES" (spaces or a tab after the word), or Phonetisaurus g2pfst's
// "word<TAB>score<TAB>P H ONES", whose score is skipped (and whose line with no phonemes, a word
// it found no pronunciation for, is no prediction, as is a word alone on its line). When a word
// has several lines (an n-best list), the first one counts: the 1-best. A malformed line is an
// error naming the file and the line; a missing file or one without predictions is an error
// naming the file.
std::unordered_map<std::string, std::vector<std::string>> read_predictions(const std::string& path);

// The reference words, each with the other system's prediction.
struct Comparison {
  std::vector<DictionaryWord> words;                // read_dictionary_words's
  std::vector<std::vector<std::string>> predicted;  // predicted[i] is words[i]'s; empty if none
  // Reference words with no prediction: each is scored wrong (every phoneme a deletion), so a
  // system cannot lower its WER by leaving hard words out.
  int64_t missing = 0;
  // Predicted words the reference does not have: ignored (a predictions file may cover more).
  int64_t extra = 0;
};
Comparison compare_predictions(const std::string& reference_path,
                               const std::string& predictions_path);

// WER and PER (ErrorRates), with and without stress, and the wrong words by kind (MistakeKinds).
struct PronunciationScores {
  double wer = 0, per = 0;
  int64_t words = 0;
  // The same words scored with stress digits dropped on both sides (without_stress).
  double wer_without_stress = 0, per_without_stress = 0;
  // The wrong words by kind: only stress, vowels, a consonant.
  int64_t stress_mistakes = 0, vowel_mistakes = 0, consonant_mistakes = 0;
};
// predicted[i] against the pronunciations of words[i].
PronunciationScores score_pronunciations(const std::vector<DictionaryWord>& words,
                                         const std::vector<std::vector<std::string>>& predicted);

// The scores as every G2P report here prints them, so that a model's and another system's read
// alike: "WER 35.31%  PER 9.51%  (without stress: WER 29.87%  PER 7.22%)", then a line with the
// wrong words by kind.
std::string describe(const PronunciationScores& scores);
// One wrong word, its prediction, its first reference and the kind of mistake:
// "  tensor  predicted T EH1 N S ER1  dictionary T EH1 N S ER0  stress only"; nothing when the
// prediction is one of the references.
std::optional<std::string> describe_if_wrong(
    const std::string& word, const std::vector<std::string>& predicted,
    const std::vector<std::vector<std::string>>& references);
// describe_if_wrong's lines of the first `count` wrong words, in order: what a program shows of
// its mistakes.
std::vector<std::string> first_mistakes(const std::vector<DictionaryWord>& words,
                                        const std::vector<std::vector<std::string>>& predicted,
                                        int64_t count);

}  // namespace sg::data
