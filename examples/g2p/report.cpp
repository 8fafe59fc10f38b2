#include "report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "nn/data/mistake_kinds.h"

namespace g2p {

void print_error_rates(const std::string& what, const ErrorRates& r) {
  fmt::print("{}: WER {:.2f}%  PER {:.2f}%  (without stress: WER {:.2f}%  PER {:.2f}%)\n", what,
             100 * r.wer, 100 * r.per, 100 * r.wer_without_stress, 100 * r.per_without_stress);
  const auto share = [&](int64_t n) {
    return 100.0 * static_cast<double>(n) / static_cast<double>(r.words);
  };
  fmt::print(
      "  wrong words by kind: stress only {} ({:.2f}%), vowels only {} ({:.2f}%), a "
      "consonant {} ({:.2f}%)\n",
      r.stress_mistakes, share(r.stress_mistakes), r.vowel_mistakes, share(r.vowel_mistakes),
      r.consonant_mistakes, share(r.consonant_mistakes));
}

bool print_if_wrong(const std::string& word, const std::vector<std::string>& predicted,
                    const std::vector<std::vector<std::string>>& references) {
  if (std::find(references.begin(), references.end(), predicted) != references.end()) return false;
  fmt::print("  {:<16} predicted {:<28} dictionary {:<28} {}\n", word,
             predicted.empty() ? "(none)" : fmt::format("{}", fmt::join(predicted, " ")),
             fmt::format("{}", fmt::join(references[0], " ")),
             sg::data::to_string(sg::data::mistake_kind(predicted, references)));
  return true;
}

}  // namespace g2p
