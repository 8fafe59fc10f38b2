// The G2P data: the CMU dictionary grouped by word, split by word, and turned into id sequences.
//   source: the word's letters                     "tensor" -> t e n s o r
//   target: <bos> its phonemes <eos>               <bos> T EH1 N S ER0 <eos>
// A word with several pronunciations gives one training pair per pronunciation; evaluation
// decodes each word once and accepts any of its pronunciations (sg::data::ErrorRates).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nn/data/pronouncing_dictionary.h"
#include "nn/nn.h"

namespace g2p {

using Word = sg::data::DictionaryWord;  // a spelling and its pronunciations

struct Dataset {
  std::vector<Word> train, dev, test;
};

// The longest word and pronunciation the model takes: decoding stops after 64 tokens, <bos> and
// <eos> included, and the positional tables cover 128 positions (Config::model_options).
inline constexpr size_t kMaxLetters = 64, kMaxPhonemes = 62;

// Reads the dictionary and splits it by word (sg::data::split_of). Words are kept in file order.
// Every word is checked before anything trains on it (check_word); the first that cannot be used
// is an error naming the file and the line.
Dataset load_dataset(const std::string& dict_path);

// Why `word` (lower case) cannot be a source, or nothing when it can: a character outside
// printable ASCII (letters are single bytes, and a checkpoint stores them as text), or more than
// kMaxLetters letters.
std::optional<std::string> check_word(const std::string& word);

// The letters of the training words, and the phonemes of their pronunciations.
sg::data::Vocabulary letter_vocabulary(const std::vector<Word>& words);
sg::data::Vocabulary phoneme_vocabulary(const std::vector<Word>& words);

// One pair per pronunciation, for sg::data::BucketLoader.
std::vector<sg::data::SequencePair> training_pairs(const std::vector<Word>& words,
                                                   const sg::data::Vocabulary& letters,
                                                   const sg::data::Vocabulary& phonemes);

// A word's letter ids: what the encoder reads.
std::vector<int64_t> letter_ids(const std::string& word, const sg::data::Vocabulary& letters);

// Why the model cannot pronounce `word` (lower case), or nothing when it can: check_word's
// reasons, or a letter its vocabulary does not have (training never saw it).
std::optional<std::string> unspellable(const std::string& word,
                                       const sg::data::Vocabulary& letters);

}  // namespace g2p
