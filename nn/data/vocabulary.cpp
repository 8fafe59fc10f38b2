#include "nn/data/vocabulary.h"

#include <algorithm>
#include <set>

#include "autograd/error.h"
#include "autograd/utf8.h"

namespace sg::data {

namespace {
const std::vector<std::string> kSpecialSymbols = {"<pad>", "<bos>", "<eos>", "<unk>"};
}

Vocabulary Vocabulary::build(const std::vector<std::string>& symbols) {
  std::set<std::string> distinct(symbols.begin(), symbols.end());
  std::vector<std::string> all = kSpecialSymbols;
  for (const std::string& s : distinct) {
    SG_CHECK(std::find(kSpecialSymbols.begin(), kSpecialSymbols.end(), s) == kSpecialSymbols.end(),
             "Vocabulary::build: '{}' is a special symbol", s);
    all.push_back(s);
  }
  return from_symbols(all);
}

Vocabulary Vocabulary::of_letters(const std::vector<std::string>& words) {
  std::vector<std::string> letters;
  for (const std::string& w : words) {
    for (std::string& letter : letters_of(w)) letters.push_back(std::move(letter));
  }
  return build(letters);
}

Vocabulary Vocabulary::from_symbols(const std::vector<std::string>& all_symbols) {
  SG_CHECK(
      all_symbols.size() >= kSpecialSymbols.size() &&
          std::equal(kSpecialSymbols.begin(), kSpecialSymbols.end(), all_symbols.begin()),
      "Vocabulary::from_symbols: the list must start with <pad> <bos> <eos> <unk> ({} symbols)",
      all_symbols.size());
  Vocabulary v;
  v.symbols_ = all_symbols;
  for (size_t i = 0; i < all_symbols.size(); ++i) {
    SG_CHECK(!all_symbols[i].empty(), "Vocabulary::from_symbols: symbol {} is empty", i);
    const bool inserted = v.ids_.emplace(all_symbols[i], static_cast<int64_t>(i)).second;
    SG_CHECK(inserted, "Vocabulary::from_symbols: '{}' appears twice", excerpt(all_symbols[i]));
  }
  return v;
}

int64_t Vocabulary::id(const std::string& symbol) const {
  auto it = ids_.find(symbol);
  return it == ids_.end() ? kUnk : it->second;
}

const std::string& Vocabulary::symbol(int64_t id) const {
  SG_CHECK(id >= 0 && id < size(), "Vocabulary::symbol: id {} out of range [0, {})", id, size());
  return symbols_[static_cast<size_t>(id)];
}

std::vector<int64_t> Vocabulary::encode(const std::vector<std::string>& symbols) const {
  std::vector<int64_t> ids;
  ids.reserve(symbols.size());
  for (const std::string& s : symbols) ids.push_back(id(s));
  return ids;
}

std::vector<std::string> Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> out;
  for (int64_t id : ids) {
    if (id == kEos) break;
    if (id == kBos || id == kPad) continue;
    out.push_back(symbol(id));
  }
  return out;
}

std::vector<std::string> letters_of(const std::string& word) { return utf8_characters(word); }

}  // namespace sg::data
