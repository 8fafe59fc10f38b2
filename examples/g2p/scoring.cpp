#include "scoring.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "nn/atomic_file.h"
#include "nn/parse_number.h"

namespace g2p {

namespace {

namespace fs = std::filesystem;

// The words one per line: the list another system pronounces.
std::string word_list(const std::vector<Word>& words) {
  std::string out;
  for (const Word& w : words) out += w.spelling + "\n";
  return out;
}

SplitSummary summarize(const std::string& name, const std::vector<Word>& words) {
  SplitSummary s{.name = name};
  s.words = static_cast<int64_t>(words.size());
  for (const Word& w : words) s.pronunciations += static_cast<int64_t>(w.pronunciations.size());
  return s;
}

// A g2pfst line, "word<TAB>score<TAB>P H ONES", as the dictionary line "word<TAB>P H ONES"; an
// empty line when it has no phonemes (no prediction). Any other line is returned as it is, less a
// trailing '\r' (which the parser drops as well).
std::string without_score(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t first = line.find('\t');
  const size_t second = first == std::string::npos ? first : line.find('\t', first + 1);
  if (second == std::string::npos || line.find('\t', second + 1) != std::string::npos) return line;
  if (!sg::nn::is_decimal_number(std::string_view(line).substr(first + 1, second - first - 1)))
    return line;
  const std::string phonemes = line.substr(second + 1);
  if (phonemes.find_first_not_of(' ') == std::string::npos) return "";
  return line.substr(0, first) + "\t" + phonemes;
}

// The file's lines with g2pfst's scores taken out, line for line, so that the dictionary parser's
// line numbers are still the file's.
std::string read_without_scores(const std::string& path) {
  std::error_code error;
  SG_CHECK(fs::exists(path, error), "g2p score: cannot open '{}': no such file", path);
  // Checked before opening: opening a FIFO would block until something writes to it.
  SG_CHECK(fs::is_regular_file(path, error), "g2p score: '{}' is not a regular file", path);
  std::ifstream in(path, std::ios::binary);
  SG_CHECK(in.is_open(), "g2p score: cannot open '{}'", path);
  std::string text;
  for (std::string line; std::getline(in, line);) text += without_score(std::move(line)) + "\n";
  SG_CHECK(!in.bad(), "g2p score: {}: read error", path);
  return text;
}

}  // namespace

std::string to_cmudict(const std::vector<Word>& words) {
  std::string out;
  for (const Word& w : words) {
    for (size_t i = 0; i < w.pronunciations.size(); ++i) {
      const std::string head = i == 0 ? w.spelling : fmt::format("{}({})", w.spelling, i + 1);
      out += fmt::format("{} {}\n", head, fmt::join(w.pronunciations[i], " "));
    }
  }
  return out;
}

std::vector<SplitSummary> write_split(const std::string& dict_path, const std::string& dir,
                                      bool overwrite) {
  const Dataset d = load_dataset(dict_path);
  std::vector<SplitSummary> summaries = {summarize("train", d.train), summarize("dev", d.dev),
                                         summarize("test", d.test)};
  std::vector<std::pair<std::string, std::string>> files;  // path, text
  const auto add = [&](SplitSummary& s, const std::string& file, std::string text) {
    s.files.push_back((fs::path(dir) / file).string());
    files.emplace_back(s.files.back(), std::move(text));
  };
  add(summaries[0], "train.dict", to_cmudict(d.train));
  add(summaries[1], "dev.dict", to_cmudict(d.dev));
  add(summaries[1], "dev.words", word_list(d.dev));
  add(summaries[2], "test.dict", to_cmudict(d.test));
  add(summaries[2], "test.words", word_list(d.test));
  // Every file is checked before any is written, so a refusal leaves the directory as it was
  // rather than a mix of two splits. symlink_status: a dangling link is a file there too.
  for (const auto& [path, text] : files) {
    SG_CHECK(overwrite || !fs::exists(fs::symlink_status(path)),
             "g2p split: {} exists (give --overwrite to replace it)", path);
  }
  for (const auto& [path, text] : files) sg::nn::write_file_atomically(path, text, "g2p split");
  return summaries;
}

std::vector<Word> read_reference(const std::string& path) {
  std::vector<sg::data::Pronunciation> entries = sg::data::read_cmudict(path);
  for (auto& e : entries) e.word = normalize_word(e.word);
  return group_by_word(std::move(entries));
}

std::unordered_map<std::string, std::vector<std::string>> read_predictions(
    const std::string& path) {
  std::istringstream lines(read_without_scores(path));
  std::unordered_map<std::string, std::vector<std::string>> predictions;
  // The dictionary's own parser: the same phoneme check, comments and "(2)" suffixes, and errors
  // naming the file and line. emplace keeps a word's first prediction, the 1-best.
  for (auto& e : sg::data::parse_cmudict(lines, path))
    predictions.emplace(normalize_word(e.word), std::move(e.phonemes));
  SG_CHECK(!predictions.empty(), "g2p score: '{}' holds no predictions", path);
  return predictions;
}

Comparison compare(const std::string& reference_path, const std::string& predictions_path) {
  Comparison c{.words = read_reference(reference_path)};
  auto predictions = read_predictions(predictions_path);
  for (const Word& w : c.words) {
    auto node = predictions.extract(w.spelling);  // taken out: what is left at the end is extra
    if (node.empty()) ++c.missing;
    c.predicted.push_back(node.empty() ? std::vector<std::string>{} : std::move(node.mapped()));
  }
  c.extra = static_cast<int64_t>(predictions.size());
  return c;
}

ErrorRates score(const std::vector<Word>& words,
                 const std::vector<std::vector<std::string>>& predicted) {
  SG_CHECK(words.size() == predicted.size(), "g2p score: {} words but {} predictions", words.size(),
           predicted.size());
  sg::data::ErrorRates rates, rates_without_stress;
  sg::data::MistakeKinds kinds;
  for (size_t i = 0; i < words.size(); ++i) {
    const auto& references = words[i].pronunciations;
    rates.add(predicted[i], references);
    kinds.add(predicted[i], references);
    // Without stress, on both sides: "R IY0 D" for "R IY1 D" is then right.
    std::vector<std::vector<std::string>> references_without_stress;
    for (const auto& r : references)
      references_without_stress.push_back(sg::data::without_stress(r));
    rates_without_stress.add(sg::data::without_stress(predicted[i]), references_without_stress);
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

}  // namespace g2p
