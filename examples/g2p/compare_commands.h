// The commands that compare another G2P system with the model on the same words (chapter 12b,
// "Scoring another system's predictions"):
//   g2p split --data cmudict.dict --out DIR      the model's split, as dictionary files
//   g2p score DIR/test.dict PRED                 PRED scored by the rule g2p eval uses
//   g2p compare DIR/test.dict PRED_A PRED_B --train DIR/train.dict     the two side by side
//
// Published G2P numbers come from different splits and scoring rules (docs/12b-g2p.md), so the
// only fair comparison runs the other system here. `split` writes the model's split as files that
// system can train on and pronounce:
//   DIR/train.dict  DIR/dev.dict  DIR/test.dict    cmudict format, alternates as "word(2)"
//   DIR/dev.words   DIR/test.words                 one word per line: what it must pronounce
// `score` reads its predictions back (sg::data::compare_predictions) and scores them with
// sg::data::score_pronunciations, which is what `g2p eval` scores the model with, so the two
// results agree to the last digit.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "g2p_data.h"
#include "nn/data/joint_sequence_g2p.h"

namespace g2p {

// What write_split wrote for one split.
struct SplitSummary {
  std::string name;  // "train", "dev", "test"
  int64_t words = 0, pronunciations = 0;
  std::vector<std::string> files;  // the paths written
};

// Writes the split of the dictionary at `dict_path` into `dir` (created if missing): the words
// come from load_dataset, so they are exactly those the model trains and is evaluated on. Each
// file is written atomically. A file that already exists is an error naming it unless
// `overwrite`; then nothing at all is written.
std::vector<SplitSummary> write_split(const std::string& dict_path, const std::string& dir,
                                      bool overwrite);

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

struct CompareArgs {
  std::string reference, first, second, train, metrics;
  std::vector<std::string> names = {"first", "second"};
};
CLI::App* add_compare_command(CLI::App& app, CompareArgs& a);
int run_compare(const CompareArgs& a);

// The joint-sequence n-gram of the training split (printing its size and training time), or
// nothing when not `wanted`: what eval, tune and ngram train.
std::optional<sg::data::JointSequenceG2p> train_ngram(const Dataset& d,
                                                      const sg::data::JointSequenceOptions& options,
                                                      bool wanted);

// g2p ngram: the n-gram alone, as a G2P system: trained, scored on a split, its 1-best written.
struct NgramArgs {
  std::string data, split = "dev", predictions;
  int order = 8, iterations = 12;
  int64_t beam = 64, limit = 0;
};
CLI::App* add_ngram_command(CLI::App& app, NgramArgs& a);
int run_ngram(const NgramArgs& a);

}  // namespace g2p
