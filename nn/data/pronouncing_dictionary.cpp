#include "nn/data/pronouncing_dictionary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "autograd/error.h"
#include "nn/data/error_rates.h"
#include "nn/data/mistake_kinds.h"
#include "nn/parse_number.h"

namespace sg::data {

namespace {

namespace fs = std::filesystem;

// A g2pfst line, "word<TAB>score<TAB>P H ONES", as the dictionary line "word<TAB>P H ONES"; an
// empty line when it has no phonemes (no prediction). Any other line is returned as it is, less a
// trailing '\r' (which the parser drops as well).
std::string without_score(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  // A word and nothing else: a system that found no pronunciation (no prediction).
  const size_t word_start = line.find_first_not_of(" \t");
  if (word_start != std::string::npos && line.compare(word_start, 3, ";;;") != 0 &&
      line.find_first_not_of(" \t", line.find_first_of(" \t", word_start)) == std::string::npos)
    return "";
  const size_t first = line.find('\t');
  const size_t second = first == std::string::npos ? first : line.find('\t', first + 1);
  if (second == std::string::npos || line.find('\t', second + 1) != std::string::npos) return line;
  if (!nn::is_decimal_number(std::string_view(line).substr(first + 1, second - first - 1)))
    return line;
  const std::string phonemes = line.substr(second + 1);
  if (phonemes.find_first_not_of(' ') == std::string::npos) return "";
  return line.substr(0, first) + "\t" + phonemes;
}

// The file's lines with g2pfst's scores taken out, line for line, so that the dictionary parser's
// line numbers are still the file's.
std::string read_without_scores(const std::string& path) {
  std::error_code error;
  SG_CHECK(fs::exists(path, error), "read_predictions: cannot open '{}': no such file", path);
  // Checked before opening: opening a FIFO would block until something writes to it.
  SG_CHECK(fs::is_regular_file(path, error), "read_predictions: '{}' is not a regular file", path);
  std::ifstream in(path, std::ios::binary);
  SG_CHECK(in.is_open(), "read_predictions: cannot open '{}'", path);
  std::string text;
  for (std::string line; std::getline(in, line);) text += without_score(std::move(line)) + "\n";
  SG_CHECK(!in.bad(), "read_predictions: {}: read error", path);
  return text;
}

}  // namespace

std::string lowercase_word(const std::string& word) {
  std::string out;
  for (char c : word) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  SG_CHECK(!out.empty(), "lowercase_word: an empty word has no pronunciation");
  return out;
}

std::vector<DictionaryWord> group_by_word(std::vector<Pronunciation> entries) {
  std::vector<DictionaryWord> words;
  std::unordered_map<std::string, size_t> index;
  for (auto& e : entries) {
    auto [it, inserted] = index.emplace(e.word, words.size());
    if (inserted) words.push_back({e.word, {}});
    words[it->second].pronunciations.push_back(std::move(e.phonemes));
  }
  return words;
}

std::vector<DictionaryWord> read_dictionary_words(const std::string& path) {
  std::vector<Pronunciation> entries = read_cmudict(path);
  for (auto& e : entries) e.word = lowercase_word(e.word);
  return group_by_word(std::move(entries));
}

std::string to_cmudict(const std::vector<DictionaryWord>& words) {
  std::string out;
  for (const DictionaryWord& w : words) {
    for (size_t i = 0; i < w.pronunciations.size(); ++i) {
      const std::string head = i == 0 ? w.spelling : fmt::format("{}({})", w.spelling, i + 1);
      out += fmt::format("{} {}\n", head, fmt::join(w.pronunciations[i], " "));
    }
  }
  return out;
}

std::unordered_map<std::string, std::vector<std::string>> read_predictions(
    const std::string& path) {
  std::istringstream lines(read_without_scores(path));
  std::unordered_map<std::string, std::vector<std::string>> predictions;
  // The dictionary's own parser: the same phoneme check, comments and "(2)" suffixes, and errors
  // naming the file and line. emplace keeps a word's first prediction, the 1-best.
  for (auto& e : parse_cmudict(lines, path))
    predictions.emplace(lowercase_word(e.word), std::move(e.phonemes));
  SG_CHECK(!predictions.empty(), "read_predictions: '{}' holds no predictions", path);
  return predictions;
}

Comparison compare_predictions(const std::string& reference_path,
                               const std::string& predictions_path) {
  Comparison c{.words = read_dictionary_words(reference_path)};
  auto predictions = read_predictions(predictions_path);
  for (const DictionaryWord& w : c.words) {
    auto node = predictions.extract(w.spelling);  // taken out: what is left at the end is extra
    if (node.empty()) ++c.missing;
    c.predicted.push_back(node.empty() ? std::vector<std::string>{} : std::move(node.mapped()));
  }
  c.extra = static_cast<int64_t>(predictions.size());
  return c;
}

PronunciationScores score_pronunciations(const std::vector<DictionaryWord>& words,
                                         const std::vector<std::vector<std::string>>& predicted) {
  SG_CHECK(words.size() == predicted.size(), "score_pronunciations: {} words but {} predictions",
           words.size(), predicted.size());
  ErrorRates rates, rates_without_stress;
  MistakeKinds kinds;
  for (size_t i = 0; i < words.size(); ++i) {
    const auto& references = words[i].pronunciations;
    rates.add(predicted[i], references);
    kinds.add(predicted[i], references);
    // Without stress, on both sides: "R IY0 D" for "R IY1 D" is then right.
    std::vector<std::vector<std::string>> references_without_stress;
    for (const auto& r : references) references_without_stress.push_back(without_stress(r));
    rates_without_stress.add(without_stress(predicted[i]), references_without_stress);
  }
  return {.wer = rates.wer(),
          .per = rates.per(),
          .words = rates.words(),
          .wer_without_stress = rates_without_stress.wer(),
          .per_without_stress = rates_without_stress.per(),
          .stress_mistakes = kinds.stress(),
          .vowel_mistakes = kinds.vowels(),
          .consonant_mistakes = kinds.consonants()};
}

std::string describe(const PronunciationScores& s) {
  const auto share = [&](int64_t n) {
    return 100.0 * static_cast<double>(n) / static_cast<double>(std::max<int64_t>(s.words, 1));
  };
  return fmt::format(
      "WER {:.2f}%  PER {:.2f}%  (without stress: WER {:.2f}%  PER {:.2f}%)\n"
      "  wrong words by kind: stress only {} ({:.2f}%), vowels only {} ({:.2f}%), a consonant {} "
      "({:.2f}%)",
      100 * s.wer, 100 * s.per, 100 * s.wer_without_stress, 100 * s.per_without_stress,
      s.stress_mistakes, share(s.stress_mistakes), s.vowel_mistakes, share(s.vowel_mistakes),
      s.consonant_mistakes, share(s.consonant_mistakes));
}

std::optional<std::string> describe_if_wrong(
    const std::string& word, const std::vector<std::string>& predicted,
    const std::vector<std::vector<std::string>>& references) {
  SG_CHECK(!references.empty(), "describe_if_wrong: '{}' has no reference pronunciation", word);
  if (std::find(references.begin(), references.end(), predicted) != references.end()) {
    return std::nullopt;
  }
  return fmt::format("  {:<16} predicted {:<28} dictionary {:<28} {}", word,
                     predicted.empty() ? "(none)" : fmt::format("{}", fmt::join(predicted, " ")),
                     fmt::format("{}", fmt::join(references[0], " ")),
                     to_string(mistake_kind(predicted, references)));
}

std::vector<std::string> first_mistakes(const std::vector<DictionaryWord>& words,
                                        const std::vector<std::vector<std::string>>& predicted,
                                        int64_t count) {
  SG_CHECK(words.size() == predicted.size(), "first_mistakes: {} words but {} predictions",
           words.size(), predicted.size());
  std::vector<std::string> lines;
  for (size_t i = 0; i < words.size() && static_cast<int64_t>(lines.size()) < count; ++i) {
    if (auto line = describe_if_wrong(words[i].spelling, predicted[i], words[i].pronunciations))
      lines.push_back(std::move(*line));
  }
  return lines;
}

}  // namespace sg::data
