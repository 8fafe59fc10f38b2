#include "compare_commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <utility>

#include "g2p_data.h"
#include "nn/atomic_file.h"
#include "nn/data/pronouncing_dictionary.h"
#include "train/cli.h"
#include "train/metrics_log.h"

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

}  // namespace

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
  add(summaries[0], "train.dict", sg::data::to_cmudict(d.train));
  add(summaries[1], "dev.dict", sg::data::to_cmudict(d.dev));
  add(summaries[1], "dev.words", word_list(d.dev));
  add(summaries[2], "test.dict", sg::data::to_cmudict(d.test));
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

CLI::App* add_split_command(CLI::App& app, SplitArgs& a) {
  auto* cmd = app.add_subcommand(
      "split", "write the train/dev/test split as dictionary files, for another G2P system");
  a.data = sg::data::default_cmudict_path();
  cmd->add_option("--data", a.data, "cmudict.dict");
  cmd->add_option("--out", a.out,
                  "directory for train.dict, dev.dict, test.dict (cmudict format) and dev.words, "
                  "test.words (one word per line)")
      ->required();
  cmd->add_flag("--overwrite", a.overwrite, "replace those files if they exist");
  return cmd;
}

// The model's split as files, so that another system trains on exactly the train words and is
// scored (g2p score) on exactly the test words.
int run_split(const SplitArgs& a) {
  for (const SplitSummary& s : write_split(a.data, a.out, a.overwrite)) {
    fmt::print("{}: {} words, {} pronunciations -> {}\n", s.name, s.words, s.pronunciations,
               fmt::join(s.files, ", "));
  }
  return 0;
}

CLI::App* add_score_command(CLI::App& app, ScoreArgs& a) {
  auto* cmd = app.add_subcommand(
      "score", "score another system's predictions against a dictionary, as eval scores the model");
  cmd->add_option("REF", a.reference,
                  "the reference, in cmudict format (e.g. test.dict of g2p split); \"word(2)\" "
                  "lines are more correct pronunciations of the word")
      ->required();
  cmd->add_option("PRED", a.predictions,
                  "the predictions: \"word P H ONES\" per line, or Phonetisaurus g2pfst's "
                  "\"word<TAB>score<TAB>P H ONES\"; of several lines for a word the first "
                  "counts (1-best); a REF word without one is scored wrong")
      ->required();
  cmd->add_option("--errors", a.errors, "mistakes to print")
      ->check(sg::train::integer_in(0, 1'000'000'000));
  cmd->add_option("--metrics-json", a.metrics, "write the error rates here");
  return cmd;
}

// Another system's predictions, scored by the rule eval scores the model by.
int run_score(const ScoreArgs& a) {
  const sg::data::Comparison c = sg::data::compare_predictions(a.reference, a.predictions);
  if (c.missing > 0) {
    fmt::print(stderr,
               "g2p score: warning: {} of the {} words of {} have no prediction in {}: each is "
               "scored wrong (all its phonemes deleted)\n",
               c.missing, c.words.size(), a.reference, a.predictions);
  }
  if (c.extra > 0)
    fmt::print("note: {} predicted words are not in {}: ignored\n", c.extra, a.reference);
  const sg::data::PronunciationScores r = sg::data::score_pronunciations(c.words, c.predicted);
  fmt::print("{} ({} words): {}\n", a.predictions, r.words, sg::data::describe(r));
  int64_t shown = 0;
  for (size_t i = 0; i < c.words.size() && shown < a.errors; ++i) {
    if (auto line = sg::data::describe_if_wrong(c.words[i].spelling, c.predicted[i],
                                                c.words[i].pronunciations)) {
      fmt::print("{}\n", *line);
      ++shown;
    }
  }
  sg::train::write_json_file(a.metrics, {{"words", r.words},
                                         {"wer", r.wer},
                                         {"per", r.per},
                                         {"wer_no_stress", r.wer_without_stress},
                                         {"per_no_stress", r.per_without_stress},
                                         {"missing_predictions", c.missing},
                                         {"extra_predictions", c.extra}});
  return 0;
}

}  // namespace g2p
