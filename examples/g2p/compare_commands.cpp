#include "compare_commands.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/data/cmudict.h"
#include "nn/train/cli.h"
#include "nn/train/metrics_log.h"
#include "report.h"
#include "scoring.h"

namespace g2p {

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

// Another system's predictions, scored by the rule eval scores the model by (score()).
int run_score(const ScoreArgs& a) {
  const Comparison c = compare(a.reference, a.predictions);
  if (c.missing > 0) {
    fmt::print(stderr,
               "g2p score: warning: {} of the {} words of {} have no prediction in {}: each is "
               "scored wrong (all its phonemes deleted)\n",
               c.missing, c.words.size(), a.reference, a.predictions);
  }
  if (c.extra > 0)
    fmt::print("note: {} predicted words are not in {}: ignored\n", c.extra, a.reference);
  const ErrorRates r = score(c.words, c.predicted);
  print_error_rates(fmt::format("{} ({} words)", a.predictions, r.words), r);
  int64_t shown = 0;
  for (size_t i = 0; i < c.words.size() && shown < a.errors; ++i)
    if (print_if_wrong(c.words[i].spelling, c.predicted[i], c.words[i].pronunciations)) ++shown;
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
