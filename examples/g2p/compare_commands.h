// The commands that compare another G2P system with the model on the same words (chapter 12b,
// "Scoring another system's predictions"):
//   g2p split --data cmudict.dict --out DIR      the model's split, as dictionary files
//   g2p score DIR/test.dict PRED                 PRED scored by the rule g2p eval uses
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace g2p {

struct SplitArgs {
  std::string data, out;
  bool overwrite = false;
};
// Declares `split` on `app`, its options read into `a` (`data` defaults to the cached dictionary).
CLI::App* add_split_command(CLI::App& app, SplitArgs& a);
int run_split(const SplitArgs& a);

struct ScoreArgs {
  std::string reference, predictions, metrics;
  int64_t errors = 10;
};
CLI::App* add_score_command(CLI::App& app, ScoreArgs& a);
int run_score(const ScoreArgs& a);

}  // namespace g2p
