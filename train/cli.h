// Command-line checks for programs that parse their flags with CLI11 (header only: include it
// where CLI11 is; the rest of the toolkit does not need it). The check sees a flag's text before
// CLI11 converts it, so a number too large for the type is refused instead of saturated.
//
//   app.add_option("--layers", layers, "encoder and decoder layers")
//       ->check(sg::train::integer_in(1, 64));   // "--layers: '65' is not an integer in [1, 64]"
//   app.add_option("--lr", lr)->check(sg::train::real_in(0, 1));     // [0, 1]
//   app.add_option("--temperature", t)->check(real_in({.lo = 0, .hi = 100, .lo_open = true}));
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "autograd/error.h"
#include "train/average_checkpoints.h"
#include "train/data_parallel_run.h"
#include "train/loop_config.h"
#include "train/numbers.h"
#include "train/option_schema.h"
#include "train/trainer.h"

namespace sg::train {

inline CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return CLI::Validator(number_in<int64_t>(lo, hi), fmt::format("INT in [{}, {}]", lo, hi));
}
// A non-negative integer up to 2^64 - 1 (a seed): "-1", "0x10" and "" are refused, not wrapped.
inline CLI::Validator unsigned_integer() {
  return CLI::Validator(number_in<uint64_t>(0, UINT64_MAX), "UINT");
}

// The same for a floating-point flag: a decimal number, in range. CLI11's own conversion takes
// "" as 0 and reads hexadecimal floats ("0x1p-3"), "inf" and "nan".
inline CLI::Validator real_in(const RealInterval& range) {
  return CLI::Validator(number_in(range), fmt::format("FLOAT in {}", range.text()));
}
inline CLI::Validator real_in(double lo, double hi) { return real_in(RealInterval{lo, hi}); }

// A flag for every option of a schema (option_schema.h), with its bounds and help: --eval-every
// for "eval_every"; a boolean is a switch (--norm-first), or --no-norm-first when it is on by
// default. Options set by a preset alone (no_flag) get none.
inline void add_options(CLI::App& app, const OptionSchema& schema) {
  for (const Option& o : schema.options()) {
    if (!o.command_line) continue;
    if (auto* i = std::get_if<int64_t*>(&o.value)) {
      app.add_option(o.flag(), **i, o.help)->check(integer_in(o.integer_lo, o.integer_hi));
    } else if (auto* u = std::get_if<uint64_t*>(&o.value)) {
      app.add_option(o.flag(), **u, o.help)->check(unsigned_integer());
    } else if (auto* r = std::get_if<double*>(&o.value)) {
      app.add_option(o.flag(), **r, o.help)->check(real_in(o.real_range));
    } else if (auto* b = std::get_if<bool*>(&o.value)) {
      app.add_flag(**b ? "--no-" + o.flag().substr(2) + "{false}" : o.flag(), **b, o.help);
    } else {
      CLI::Option* text = app.add_option(o.flag(), *std::get<std::string*>(o.value), o.help);
      if (o.choices.empty()) continue;
      text->check(CLI::Validator(
          [flag = o.flag(), choices = o.choices](std::string& value) -> std::string {
            if (std::find(choices.begin(), choices.end(), value) != choices.end()) return "";
            return fmt::format("{} must be one of {}, got '{}'", flag, fmt::join(choices, ", "),
                               value);
          },
          fmt::format("one of {}", fmt::join(o.choices, ", "))));
    }
  }
}

// Copies into `to` the options of `from` that were given on the command line `app` parsed (the
// same schema over another config): a preset's values, overridden by the flags a user typed.
//   Config given;  add_options(*cmd, given.schema());  ...parse...
//   Config config = Config::preset_named(preset);  copy_given(*cmd, given.schema(),
//   config.schema());
inline void copy_given(const CLI::App& app, const OptionSchema& from, const OptionSchema& to) {
  SG_CHECK(from.options().size() == to.options().size(), "copy_given: two different schemas");
  for (size_t i = 0; i < from.options().size(); ++i) {
    const Option& o = from.options()[i];
    if (!o.command_line || app.count(o.flag()) == 0) continue;
    std::visit([&](auto* source) { *std::get<decltype(source)>(to.options()[i].value) = *source; },
               o.value);
  }
}

// The flags of a training run that are not its configuration (a checkpoint keeps the config, not
// these): where the run goes, and how this process runs it. --resume's help names the options of
// `schema` that may change on a resume.
inline void add_run_flags(CLI::App& cmd, TrainerOptions& options, const OptionSchema& schema) {
  cmd.add_option("--out", options.out_dir, "the run's directory");
  cmd.add_flag("--resume", options.resume,
               "continue the run in --out, with the same configuration (only " +
                   flags_that_may_change(schema.fields()) + " may change)");
  cmd.add_flag("--overwrite", options.overwrite, "replace the run in --out");
  cmd.add_option("--stop-after", options.stop_after,
                 "stop at this step (resume later with --resume)")
      ->check(integer_in(0, LoopConfig::kMaxSteps));
  cmd.add_flag("--bf16", options.bf16,
               "mixed precision: the forward and the loss under bfloat16 autocast (products in "
               "bfloat16; sums, weights and the optimizer in float32)");
  cmd.add_flag("--deterministic", options.deterministic,
               "sums in a fixed order where a GPU would add in any order, so the run repeats "
               "itself bit for bit (slower on a GPU)");
  cmd.add_flag("--quiet", options.quiet, "no progress output");
  cmd.add_option("--metrics-json", options.metrics_json, "write the run's numbers here at the end");
  cmd.add_option("--log-jsonl", options.log_jsonl, "append a JSON line per evaluation here");
}

// --distributed and --bucket-mb (data_parallel_run.h): data parallelism over `mpirun -np N`.
inline void add_data_parallel_flags(CLI::App& cmd, DataParallelOptions& options) {
  cmd.add_flag("--distributed", options.distributed,
               "data-parallel over the processes of `mpirun -np N` (--batch is the global batch; "
               "rank 0 prints and writes)");
  cmd.add_option("--bucket-mb", options.bucket_mb,
                 "with --distributed: MiB of gradients per all-reduce bucket (default 25)")
      ->check(real_in(1e-6, 1e6))
      ->needs("--distributed");
}

// With parallel.distributed, before anything else: joins the job and refuses, on every rank
// alike, ranks started with different flags (every option of `schema`, and the run's own).
inline void join_with_same_flags(const DataParallelOptions& parallel, const OptionSchema& schema,
                                 const TrainerOptions& options, const std::string& program) {
  join_distributed_job_if_asked(parallel);
  if (!parallel.distributed) return;
  std::vector<std::pair<std::string, std::string>> settings = schema.flag_values();
  const auto given = [](bool on) { return on ? "given" : "not given"; };
  settings.insert(settings.end(), {{"--out", options.out_dir},
                                   {"--resume", given(options.resume)},
                                   {"--overwrite", given(options.overwrite)},
                                   {"--stop-after", std::to_string(options.stop_after)},
                                   {"--bf16", given(options.bf16)},
                                   {"--deterministic", given(options.deterministic)},
                                   {"--bucket-mb", fmt::format("{}", parallel.bucket_mb)}});
  check_same_settings_on_every_rank(std::move(settings), program);
}

// `average`: the mean of several checkpoints' weights as one file (average_checkpoints.h), from
// the checkpoints named or from a run's newest step checkpoints (--run, --last).
inline CLI::App* add_average_command(CLI::App& app, AverageRequest& request,
                                     const std::string& what_out_is) {
  auto* cmd =
      app.add_subcommand("average", "the mean of several checkpoints' weights, as one model");
  cmd->add_option("checkpoints", request.paths, "checkpoints of one model, newest last");
  auto* run_option =
      cmd->add_option("--run", request.run_dir, "or: a run directory, for its step checkpoints");
  cmd->add_option("--last", request.last, "with --run: the newest this many")
      ->check(integer_in(1, LoopConfig::kMaxAverageLast))
      ->needs(run_option);
  cmd->add_option("--out", request.out, what_out_is)->required();
  cmd->add_flag("--overwrite", request.overwrite, "replace --out if it exists");
  return cmd;
}

}  // namespace sg::train
