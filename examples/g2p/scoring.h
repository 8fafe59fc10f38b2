// Comparing another G2P system with the model: the same words, scored by the same rule.
//
// Published G2P numbers come from different splits and scoring rules (docs/12b-g2p.md), so the
// only fair comparison runs the other system here. `g2p split` writes the model's split as files
// that system can train on and pronounce:
//   DIR/train.dict  DIR/dev.dict  DIR/test.dict    cmudict format, alternates as "word(2)"
//   DIR/dev.words   DIR/test.words                 one word per line: what it must pronounce
// `g2p score` reads its predictions back and scores them with score(), which is what `g2p eval`
// scores the model with (sg::data::ErrorRates: a word is right when the prediction equals any of
// its pronunciations; PER against the closest one), so the two results agree to the last digit.
//
//   g2p::write_split("cmudict.dict", "runs/split", false);
//   g2p::Comparison c = g2p::compare("runs/split/test.dict", "test.predicted");
//   g2p::ErrorRates r = g2p::score(c.words, c.predicted);
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "g2p_data.h"
#include "trainer.h"

namespace g2p {

// What write_split wrote for one split.
struct SplitSummary {
  std::string name;  // "train", "dev", "test"
  int64_t words = 0, pronunciations = 0;
  std::vector<std::string> files;  // the paths written
};

// Writes the split of the dictionary at `dict_path` into `dir` (created if missing): the words
// come from load_dataset, so they are exactly those the model trains and is evaluated on. Each
// file is written atomically (sg::nn::write_file_atomically). A file that already exists is an
// error naming it unless `overwrite`; then nothing at all is written.
std::vector<SplitSummary> write_split(const std::string& dict_path, const std::string& dir,
                                      bool overwrite);

// The words as the dictionary writes them, one line per pronunciation: "read R EH1 D", then
// "read(2) R IY1 D".
std::string to_cmudict(const std::vector<Word>& words);

// A reference dictionary (cmudict format) by word, in file order, words lower-cased as
// normalize_word does. A missing, empty or malformed file is an error naming it (and the line).
std::vector<Word> read_reference(const std::string& path);

// Another system's predictions, one pronunciation per word (lower-cased). A line is a dictionary
// line, "word P H ONES" (spaces or a tab after the word), or Phonetisaurus g2pfst's
// "word<TAB>score<TAB>P H ONES", whose score is skipped (and whose line with no phonemes, a word
// it found no pronunciation for, is no prediction). When a word has several lines (an n-best
// list), the first one counts: the 1-best. A malformed line is an error naming the file and the
// line; a missing file or one without predictions is an error naming the file.
std::unordered_map<std::string, std::vector<std::string>> read_predictions(const std::string& path);

// The reference words, each with the other system's prediction.
struct Comparison {
  std::vector<Word> words;                          // read_reference's
  std::vector<std::vector<std::string>> predicted;  // predicted[i] is words[i]'s; empty if none
  // Reference words with no prediction: each is scored wrong (every phoneme a deletion), so a
  // system cannot lower its WER by leaving hard words out.
  int64_t missing = 0;
  // Predicted words the reference does not have: ignored (a predictions file may cover more).
  int64_t extra = 0;
};
Comparison compare(const std::string& reference_path, const std::string& predictions_path);

// WER and PER, with and without stress, and the mistakes by kind, of predicted[i] against the
// pronunciations of words[i]: the rule `g2p eval` scores the model by.
ErrorRates score(const std::vector<Word>& words,
                 const std::vector<std::vector<std::string>>& predicted);

}  // namespace g2p
