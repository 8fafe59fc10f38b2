// A vocabulary maps symbols (letters, phonemes) to ids and back. The first four ids are the
// special symbols every sequence model needs, the same in every vocabulary:
//   0 <pad>  fills a batch's short rows; the loss ignores it and it is never generated
//   1 <bos>  begins every target (the decoder's first input)
//   2 <eos>  ends a target: generation stops when it is produced
//   3 <unk>  stands for a symbol the vocabulary lacks (a letter never seen in training)
// The other symbols follow in sorted order, so a vocabulary built from the same symbols is the
// same on every machine and can be saved as its list of symbols.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace sg::data {

class Vocabulary {
 public:
  static constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kUnk = 3;
  static constexpr int64_t kSpecials = 4;

  // The distinct symbols of `symbols` (any order, repeats allowed) after the four specials.
  static Vocabulary build(const std::vector<std::string>& symbols);
  // The distinct letters of `words` (letters_of), after the four specials: a speller's alphabet.
  static Vocabulary of_letters(const std::vector<std::string>& words);
  // The inverse of symbols(): the saved list, specials first. Throws on a malformed list.
  static Vocabulary from_symbols(const std::vector<std::string>& all_symbols);

  int64_t size() const { return static_cast<int64_t>(symbols_.size()); }
  bool contains(const std::string& symbol) const { return ids_.contains(symbol); }
  int64_t id(const std::string& symbol) const;  // kUnk when absent
  const std::string& symbol(int64_t id) const;  // throws when out of range
  const std::vector<std::string>& symbols() const { return symbols_; }

  std::vector<int64_t> encode(const std::vector<std::string>& symbols) const;
  // Stops at the first <eos>; skips <bos> and <pad>.
  std::vector<std::string> decode(const std::vector<int64_t>& ids) const;

 private:
  std::vector<std::string> symbols_;
  std::unordered_map<std::string, int64_t> ids_;
};

// The letters of a word, one symbol each: "tensor" -> {"t", "e", "n", "s", "o", "r"}; a letter is
// a UTF-8 character ("café" -> {"c", "a", "f", "é"}), and text that is not UTF-8 is an error.
std::vector<std::string> letters_of(const std::string& word);

}  // namespace sg::data
