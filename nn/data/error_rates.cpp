#include "nn/data/error_rates.h"

#include <algorithm>

#include "autograd/error.h"

namespace sg::data {

int64_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  // One row of the dynamic-programming table at a time: row[j] = distance(a[:i], b[:j]).
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];  // distance(a[:i-1], b[:j-1])
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({substitute, row[j] + 1, row[j - 1] + 1});
    }
  }
  return row[b.size()];
}

std::vector<std::string> without_stress(const std::vector<std::string>& phonemes) {
  std::vector<std::string> out;
  out.reserve(phonemes.size());
  for (const std::string& phoneme : phonemes) {
    size_t end = phoneme.size();
    while (end > 0 && phoneme[end - 1] >= '0' && phoneme[end - 1] <= '9') --end;
    // A symbol made only of digits is not a stressed vowel: it stays as it is.
    out.push_back(end == 0 ? phoneme : phoneme.substr(0, end));
  }
  return out;
}

void ErrorRates::add(const std::vector<std::string>& predicted,
                     const std::vector<std::vector<std::string>>& references) {
  SG_CHECK(!references.empty(), "ErrorRates::add: a word needs at least one reference");
  // The closest reference: fewest edits; among equals, the longer one (the lower rate).
  int64_t best_edits = -1, best_length = 0;
  for (const auto& reference : references) {
    const int64_t edits = edit_distance(predicted, reference);
    const auto length = static_cast<int64_t>(reference.size());
    if (best_edits < 0 || edits < best_edits || (edits == best_edits && length > best_length)) {
      best_edits = edits;
      best_length = length;
    }
  }
  ++words_;
  if (best_edits > 0) ++wrong_words_;
  phoneme_edits_ += best_edits;
  reference_phonemes_ += best_length;
}

double ErrorRates::wer() const {
  return words_ == 0 ? 0.0 : static_cast<double>(wrong_words_) / static_cast<double>(words_);
}

double ErrorRates::per() const {
  return reference_phonemes_ == 0
             ? 0.0
             : static_cast<double>(phoneme_edits_) / static_cast<double>(reference_phonemes_);
}

}  // namespace sg::data
