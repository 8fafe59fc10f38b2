#include "compare_commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <utility>

#include "g2p_data.h"
#include "nn/atomic_file.h"
#include "nn/data/joint_sequence_g2p.h"
#include "nn/data/pronouncing_dictionary.h"
#include "nn/data/system_comparison.h"
#include "train/cli.h"
#include "train/metrics_log.h"
#include "train/output_paths.h"

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

// The predictions of `path` for the words of `reference`, with a warning for words it has none
// for (each is scored wrong) and a note of the words it has that the reference does not.
sg::data::Comparison predictions_for(const std::string& command, const std::string& reference,
                                     const std::string& path) {
  sg::data::Comparison c = sg::data::compare_predictions(reference, path);
  if (c.missing > 0) {
    fmt::print(stderr,
               "g2p {}: warning: {} of the {} words of {} have no prediction in {}: each is "
               "scored wrong (all its phonemes deleted)\n",
               command, c.missing, c.words.size(), reference, path);
  }
  if (c.extra > 0)
    fmt::print("note: {} words of {} are not in {}: ignored\n", c.extra, path, reference);
  return c;
}

nlohmann::json to_json(const sg::data::Agreement& a) {
  return {{"words", a.words},
          {"both_right", a.both_right},
          {"only_first", a.only_first},
          {"only_second", a.only_second},
          {"both_wrong", a.both_wrong},
          {"wer_first", a.wer_first()},
          {"wer_second", a.wer_second()},
          {"oracle_wer", a.oracle_wer()}};
}

nlohmann::json to_json(const std::vector<sg::data::AgreementGroup>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : groups) {
    out.push_back({{"group", g.label},
                   {"with_stress", to_json(g.with_stress)},
                   {"without_stress", to_json(g.without_stress)}});
  }
  return out;
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
    // A directory there, or the dictionary being split (even with --overwrite): refused before
    // any write.
    sg::train::check_replaced_output({"g2p split --out", path}, {{"--data", dict_path}});
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
  SG_CHECK(!a.out.empty(), "g2p split: --out is empty: give the split's directory");
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
  if (!a.metrics.empty()) sg::nn::check_can_replace(a.metrics, "--metrics-json");
  sg::train::check_outputs({{"--metrics-json", a.metrics}},
                           {{"REF", a.reference}, {"PRED", a.predictions}});
  const sg::data::Comparison c = predictions_for("score", a.reference, a.predictions);
  const sg::data::PronunciationScores r = sg::data::score_pronunciations(c.words, c.predicted);
  fmt::print("{} ({} words): {}\n", a.predictions, r.words, sg::data::describe(r));
  for (const std::string& line : sg::data::first_mistakes(c.words, c.predicted, a.errors))
    fmt::print("{}\n", line);
  sg::train::write_json_file(a.metrics, {{"words", r.words},
                                         {"wer", r.wer},
                                         {"per", r.per},
                                         {"wer_no_stress", r.wer_without_stress},
                                         {"per_no_stress", r.per_without_stress},
                                         {"missing_predictions", c.missing},
                                         {"extra_predictions", c.extra}});
  return 0;
}

CLI::App* add_compare_command(CLI::App& app, CompareArgs& a) {
  auto* cmd = app.add_subcommand(
      "compare", "two systems' predictions side by side: where each is right and the other wrong");
  cmd->add_option("REF", a.reference, "the reference, as for score")->required();
  cmd->add_option("FIRST", a.first, "the first system's predictions, as for score")->required();
  cmd->add_option("SECOND", a.second, "the second system's predictions")->required();
  cmd->add_option("--names", a.names, "the two systems' names in the tables")
      ->delimiter(',')
      ->expected(2);
  cmd->add_option("--train", a.train,
                  "the training words (train.dict of g2p split): groups the words by how often "
                  "their rarest letter trigram occurs there");
  cmd->add_option("--metrics-json", a.metrics, "write the comparison here");
  return cmd;
}

// Two systems on the same words (sg::data::compare_systems), e.g. the model's beam-search
// predictions (g2p pronounce < test.words) against Phonetisaurus'.
int run_compare(const CompareArgs& a) {
  if (!a.metrics.empty()) sg::nn::check_can_replace(a.metrics, "--metrics-json");
  sg::train::check_outputs(
      {{"--metrics-json", a.metrics}},
      {{"REF", a.reference}, {"FIRST", a.first}, {"SECOND", a.second}, {"--train", a.train}});
  const sg::data::Comparison first = predictions_for("compare", a.reference, a.first);
  const sg::data::Comparison second = predictions_for("compare", a.reference, a.second);
  const std::vector<Word> training =
      a.train.empty() ? std::vector<Word>{} : sg::data::read_dictionary_words(a.train);
  const sg::data::SystemComparison c =
      sg::data::compare_systems(first.words, first.predicted, second.predicted, training);
  fmt::print("{} ({} words): {} against {}\n{}", a.reference, first.words.size(), a.names[0],
             a.names[1], sg::data::describe(c, a.names[0], a.names[1]));
  nlohmann::json all = to_json(std::vector{c.all});
  sg::train::write_json_file(a.metrics, {{"reference", a.reference},
                                         {"first", {{"name", a.names[0]}, {"path", a.first}}},
                                         {"second", {{"name", a.names[1]}, {"path", a.second}}},
                                         {"all", all[0]},
                                         {"by_length", to_json(c.by_length)},
                                         {"by_context", to_json(c.by_context)}});
  return 0;
}

CLI::App* add_ngram_command(CLI::App& app, NgramArgs& a) {
  auto* cmd = app.add_subcommand(
      "ngram", "train the joint-sequence n-gram (sg::data::JointSequenceG2p) and score it");
  a.data = sg::data::default_cmudict_path();
  cmd->add_option("--data", a.data, "cmudict.dict");
  cmd->add_option("--order", a.order, "n-gram order")->check(sg::train::integer_in(1, 8));
  cmd->add_option("--iterations", a.iterations, "rounds of EM")
      ->check(sg::train::integer_in(1, 1000));
  cmd->add_option("--beam", a.beam, "hypotheses per letter")
      ->check(sg::train::integer_in(1, 100000));
  cmd->add_option("--split", a.split, "dev | test")->check(CLI::IsMember({"dev", "test"}));
  cmd->add_option("--limit", a.limit, "only the first N words (0 = all)")
      ->check(sg::train::integer_in(0, 1'000'000'000));
  cmd->add_option("--predictions", a.predictions, "write the 1-best here");
  return cmd;
}

std::optional<sg::data::JointSequenceG2p> train_ngram(const Dataset& d,
                                                      const sg::data::JointSequenceOptions& options,
                                                      bool wanted) {
  if (!wanted) return std::nullopt;
  const auto start = std::chrono::steady_clock::now();
  std::optional<sg::data::JointSequenceG2p> ngram(std::in_place, d.train, options);
  fmt::print(
      "joint-sequence {}-gram of the {} training words: {} graphones ({} pronunciations left "
      "unaligned), trained in {:.1f} s\n",
      options.order, d.train.size(), ngram->graphones(), ngram->unaligned_pairs(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::fflush(stdout);
  return ngram;
}

int run_ngram(const NgramArgs& a) {
  sg::train::check_replaced_output({"--predictions", a.predictions}, {{"--data", a.data}});
  const Dataset d = load_dataset(a.data);
  // Refused as eval refuses it: the scores of no words would read as a perfect 0%.
  SG_CHECK(!(a.split == "dev" ? d.dev : d.test).empty(), "g2p ngram: {} has no {} words", a.data,
           a.split);
  const auto ngram =
      train_ngram(d, {.order = a.order, .iterations = a.iterations, .beam = a.beam}, true);
  std::vector<Word> words = a.split == "dev" ? d.dev : d.test;
  if (a.limit > 0 && static_cast<size_t>(a.limit) < words.size())
    words.resize(static_cast<size_t>(a.limit));
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<std::string>> predicted;
  std::string text;
  for (const Word& w : words) {
    auto best = ngram->pronounce(w.spelling, 1);
    predicted.push_back(best.empty() ? std::vector<std::string>{} : best[0].phonemes);
    text += fmt::format("{} {}\n", w.spelling, fmt::join(predicted.back(), " "));
  }
  const double decoded =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto r = sg::data::score_pronunciations(words, predicted);
  fmt::print("{} ({} words, decoded in {:.1f} s): {}\n", a.split, r.words, decoded,
             sg::data::describe(r));
  if (!a.predictions.empty()) sg::nn::write_file_atomically(a.predictions, text, "g2p ngram");
  return 0;
}

}  // namespace g2p
