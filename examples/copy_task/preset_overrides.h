// The model and training flags of `copy_task train` that override the chosen preset only when
// given (--layers 4 changes the layers of --preset tiny, and nothing else), each checked as it is
// read. Header only: main.cpp is its one user.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "config.h"
#include "nn/train/cli.h"
#include "tasks.h"

namespace copy_task {

// Flags that override the preset only when given.
struct Overrides {
  std::optional<std::string> task, positional;
  std::optional<int64_t> vocab, length, min_len, batch, layers, d_model, heads, d_ff, steps, warmup,
      eval_every, eval_samples, final_samples, checkpoint_every;
  std::optional<double> dropout, lr_factor, label_smoothing;
  std::optional<uint64_t> seed;
  bool norm_first = false;

  void add_to(CLI::App& app) {
    using sg::train::integer_in;
    using sg::train::real_in;
    app.add_option("--task", task, "copy | reverse | sort")
        ->check(CLI::IsMember({"copy", "reverse", "sort"}));
    app.add_option("--vocab", vocab, "vocabulary size (0 = pad, 1 = start)")
        ->check(integer_in(3, Config::kMaxVocab));
    // (--length and --min-len are checked by Config::validate(), which names both.)
    app.add_option("--length", length, "sequence length, start symbol included");
    app.add_option("--min-len", min_len,
                   "shortest sequence (< length gives padded, variable lengths)");
    app.add_option("--batch", batch, "sequences per step")->check(integer_in(1, Config::kMaxBatch));
    app.add_option("--layers", layers, "encoder and decoder layers")
        ->check(integer_in(1, Config::kMaxLayers));
    app.add_option("--d-model", d_model, "model width")->check(integer_in(1, Config::kMaxDModel));
    app.add_option("--heads", heads, "attention heads")->check(integer_in(1, Config::kMaxHeads));
    app.add_option("--ffn", d_ff, "feed-forward width")->check(integer_in(1, Config::kMaxFfn));
    app.add_option("--dropout", dropout, "dropout probability")->check(real_in(0, 1));
    app.add_flag("--norm-first", norm_first, "pre-LN layers instead of post-LN");
    app.add_option("--positional", positional, "sinusoidal | learned")
        ->check(CLI::IsMember({"sinusoidal", "learned"}));
    app.add_option("--steps", steps, "training steps (may change on --resume)")
        ->check(integer_in(0, Config::kMaxSteps));
    app.add_option("--warmup", warmup, "Noam warm-up steps")
        ->check(integer_in(1, Config::kMaxSteps));
    app.add_option("--lr-factor", lr_factor, "Noam factor")->check(real_in(0, 1e30));
    app.add_option("--label-smoothing", label_smoothing, "label smoothing")->check(real_in(0, 1));
    app.add_option("--eval-every", eval_every, "steps between held-out evaluations")
        ->check(integer_in(1, Config::kMaxSteps));
    app.add_option("--eval-samples", eval_samples, "sequences per evaluation")
        ->check(integer_in(1, Config::kMaxSamples));
    app.add_option("--final-samples", final_samples, "sequences for the final evaluation")
        ->check(integer_in(1, Config::kMaxSamples));
    app.add_option("--checkpoint-every", checkpoint_every,
                   "steps between checkpoints (0 = end only)")
        ->check(integer_in(0, Config::kMaxSteps));
    app.add_option("--seed", seed, "random seed");
  }

  void apply(Config& c) const {
    if (task) c.task = parse_task(*task);
    if (positional) c.positional = *positional;
    auto set = [](auto& field, const auto& value) {
      if (value) field = *value;
    };
    set(c.vocab, vocab), set(c.length, length), set(c.batch, batch), set(c.layers, layers);
    set(c.d_model, d_model), set(c.heads, heads), set(c.d_ff, d_ff), set(c.steps, steps);
    set(c.warmup, warmup), set(c.eval_every, eval_every), set(c.eval_samples, eval_samples);
    set(c.final_samples, final_samples), set(c.checkpoint_every, checkpoint_every);
    set(c.dropout, dropout), set(c.lr_factor, lr_factor), set(c.label_smoothing, label_smoothing);
    set(c.seed, seed);
    c.min_len = min_len ? *min_len : (length ? *length : c.min_len);
    if (norm_first) c.norm_first = true;
  }
};

}  // namespace copy_task
