#include "g2p_data.h"

#include <algorithm>

namespace g2p {

using sg::data::Vocabulary;

std::optional<std::string> check_word(const std::string& word) {
  for (unsigned char c : word) {
    if (c < 0x21 || c > 0x7e) {
      return fmt::format(
          "the word '{}' has the byte 0x{:02x}, outside printable ASCII (the letters of a word "
          "are single ASCII characters: remove or transliterate it)",
          sg::excerpt(word), c);
    }
  }
  if (word.size() > kMaxLetters) {
    return fmt::format("the word '{}' has {} letters; at most {} fit the model",
                       sg::excerpt(word, 20), word.size(), kMaxLetters);
  }
  return std::nullopt;
}

std::optional<std::string> unspellable(const std::string& word, const Vocabulary& letters) {
  if (auto why = check_word(word)) return why;
  for (const std::string& letter : sg::data::letters_of(word)) {
    if (!letters.contains(letter)) {
      return fmt::format("its letter '{}' is not in the model's alphabet (training never saw it)",
                         letter);
    }
  }
  return std::nullopt;
}

Dataset load_dataset(const std::string& dict_path) {
  std::vector<sg::data::Pronunciation> entries = sg::data::read_cmudict(dict_path);
  for (const auto& e : entries) {
    // Found here, with the line, rather than at the first checkpoint (a letter that is not UTF-8
    // text) or mid-run (a word longer than the model's positions).
    if (auto why = check_word(e.word)) SG_FAIL("g2p: {}:{}: {}", dict_path, e.line, *why);
    SG_CHECK(e.phonemes.size() <= kMaxPhonemes,
             "g2p: {}:{}: the pronunciation of '{}' has {} phonemes; at most {} fit the model",
             dict_path, e.line, e.word, e.phonemes.size(), kMaxPhonemes);
  }
  Dataset d;
  for (Word& w : sg::data::group_by_word(std::move(entries))) {
    switch (sg::data::split_of(w.spelling)) {
      case sg::data::Split::kTrain:
        d.train.push_back(std::move(w));
        break;
      case sg::data::Split::kDev:
        d.dev.push_back(std::move(w));
        break;
      case sg::data::Split::kTest:
        d.test.push_back(std::move(w));
        break;
    }
  }
  SG_CHECK(!d.train.empty(), "g2p: {} has no training words", dict_path);
  return d;
}

Vocabulary letter_vocabulary(const std::vector<Word>& words) {
  std::vector<std::string> spellings;
  for (const Word& w : words) spellings.push_back(w.spelling);
  return Vocabulary::of_letters(spellings);
}

Vocabulary phoneme_vocabulary(const std::vector<Word>& words) {
  std::vector<std::string> phonemes;
  for (const Word& w : words)
    for (const auto& p : w.pronunciations) phonemes.insert(phonemes.end(), p.begin(), p.end());
  return Vocabulary::build(phonemes);
}

std::vector<sg::data::SequencePair> training_pairs(const std::vector<Word>& words,
                                                   const Vocabulary& letters,
                                                   const Vocabulary& phonemes) {
  std::vector<sg::data::SequencePair> pairs;
  for (const Word& w : words) {
    std::vector<int64_t> source = letter_ids(w.spelling, letters);
    for (const auto& p : w.pronunciations) {
      std::vector<int64_t> target{Vocabulary::kBos};
      for (int64_t id : phonemes.encode(p)) target.push_back(id);
      target.push_back(Vocabulary::kEos);
      pairs.push_back({source, std::move(target)});
    }
  }
  return pairs;
}

std::vector<int64_t> letter_ids(const std::string& word, const Vocabulary& letters) {
  return letters.encode(sg::data::letters_of(word));
}

}  // namespace g2p
