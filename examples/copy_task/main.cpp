// copy_task: train a sequence-to-sequence Transformer to copy (or reverse, or sort) sequences of
// tokens, then decode with it. The main job of scratchgrad, and the end of the tutorial.
//
//   copy_task train                          # the tiny preset: 100% exact match in < 1000 steps
//   copy_task train --preset annotated --steps 400 --out runs/big
//   copy_task train --detect-anomaly         # the first NaN/Inf names its op and line
//   copy_task eval --checkpoint runs/copy/model.safetensors
//   copy_task decode --checkpoint runs/copy/model.safetensors "1 5 3 9 2 7 4 4 8 6"
//   mpirun -np 2 copy_task train --distributed  # data-parallel over 2 processes (README)
//   copy_task decode --print-logits ...      # and each step's log-probabilities
//   copy_task capture --checkpoint model.safetensors --batch-out batch.safetensors
//                     --out ours.safetensors   # one step's outputs and gradients
//   copy_task compare torch.safetensors ours.safetensors   # the first entry that differs
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>

#include "attention_plots.h"
#include "autograd/anomaly.h"
#include "autograd/backend/cpu_fast/parallel.h"
#include "capture_step.h"
#include "command_line.h"
#include "decoding.h"
#include "nn/capture_compare.h"
#include "train/data_parallel_run.h"
#include "train/metrics_log.h"
#include "train/output_paths.h"
#include "trainer.h"

using namespace copy_task;

namespace {

std::string join(const std::vector<int64_t>& tokens) {
  std::string s;
  for (size_t i = 0; i < tokens.size(); ++i) s += (i ? " " : "") + std::to_string(tokens[i]);
  return s;
}

int run_train(const Config& config, const TrainOptions& options) {
  // With --distributed every rank trains, and rank 0 alone prints, evaluates and writes; ranks
  // started with different settings stop before anything is printed (train() checks it too).
  sg::train::join_distributed_job_if_asked(options.parallel);
  if (options.parallel.distributed) check_same_settings_on_every_rank(config, options);
  const bool rank0 = !options.parallel.distributed || sg::train::distributed_rank() == 0;
  // Which kernels run: the device, and on the CPU the reference or the fast backend.
  const std::string backend =
      options.device == "cpu"
          ? fmt::format("cpu, {} kernels", sg::cpu_kernels_name(sg::cpu_kernels()))
          : options.device;
  if (rank0)
    fmt::print(
        "training {} on '{}' ({}): {} layers, d_model {}, {} heads, ffn {}, length {}, batch {}, "
        "{} steps\n",
        config.preset, config.task, backend, config.layers, config.d_model, config.heads,
        config.d_ff, config.length, config.batch, config.loop.steps);
  std::fflush(stdout);  // before the progress output on stderr
  TrainSummary s = train(config, options);
  if (!rank0) return 0;
  if (s.world_size > 1) {
    fmt::print(
        "\n{} ranks, each {} sequences of every batch of {}; {:.2f} MB of gradients "
        "all-reduced per step\n",
        s.world_size, config.batch / s.world_size, config.batch, s.gradient_bytes / 1e6);
    std::vector<std::string> per_rank;
    int64_t total = 0;
    for (int64_t bytes : s.optimizer_state_bytes) {
      per_rank.push_back(fmt::format("{:.2f}", static_cast<double>(bytes) / 1e6));
      total += bytes;
    }
    fmt::print("optimizer state per rank: {} MB{}\n", fmt::join(per_rank, ", "),
               options.zero1 ? fmt::format(" (ZeRO-1: {:.2f} MB in all, held once)",
                                           static_cast<double>(total) / 1e6)
                             : " (each rank holds all of it)");
  }
  LoadedModel saved = load_checkpoint(options.out_dir + "/model.safetensors");
  fmt::print("\ntrained {} steps in {:.1f} s ({:.1f} ms/step median), final loss {:.4f}\n", s.steps,
             s.train_seconds, s.median_ms_per_step, s.final_loss);
  if (s.first_perfect_step)
    fmt::print("first 100% held-out exact match at step {}\n", *s.first_perfect_step);
  fmt::print("saved model: {}/model.safetensors (best held-out evaluation, step {})\n",
             options.out_dir, s.best_step);
  fmt::print("saved model on {} fresh sequences: exact match {:.2f}%, token accuracy {:.2f}%\n\n",
             s.final_eval.samples, 100 * s.final_eval.exact_match,
             100 * s.final_eval.token_accuracy);
  TaskGenerator examples(config.task_kind(), config.vocab, config.min_len, config.length,
                         config.seed ^ 0x4000);
  Batch b = examples.next(4);
  auto decoded = greedy_decode(*saved.model, b.src, config.length);
  std::vector<int64_t> src = b.src.to_vector<int64_t>();
  std::vector<int64_t> lengths = b.lengths.to_vector<int64_t>();
  for (int64_t i = 0; i < 4; ++i) {
    std::vector<int64_t> in(src.begin() + i * config.length,
                            src.begin() + i * config.length + lengths[i]);
    std::vector<int64_t> out(decoded[i].begin(), decoded[i].begin() + lengths[i]);
    fmt::print("  {}  ->  {}{}\n", join(in), join(out),
               out == examples.target_for(in) ? "" : "   (wrong)");
  }
  write_attention_plots(*saved.model, b.src.narrow(0, 0, 1), config, options.out_dir);
  fmt::print(
      "\npictures: {0}/loss.svg {0}/accuracy.svg {0}/cross_attention.svg {0}/self_attention.svg\n",
      options.out_dir);
  return 0;
}

int run_eval(const std::string& checkpoint, int64_t samples, uint64_t seed,
             const std::string& metrics) {
  sg::train::check_replaced_output({"--metrics-json", metrics}, {{"--checkpoint", checkpoint}});
  LoadedModel loaded = load_checkpoint(checkpoint);
  const Config& c = loaded.config;
  TaskGenerator gen(c.task_kind(), c.vocab, c.min_len, c.length, seed);
  EvalResult e = evaluate(*loaded.model, gen, samples);
  fmt::print("{} on {} fresh '{}' sequences: exact match {:.2f}%, token accuracy {:.2f}%\n",
             checkpoint, samples, c.task, 100 * e.exact_match, 100 * e.token_accuracy);
  sg::train::write_json_file(metrics, {{"config", c.to_map()},
                                       {"exact_match", e.exact_match},
                                       {"token_accuracy", e.token_accuracy},
                                       {"samples", samples}});
  return 0;
}

std::vector<int64_t> parse_sequence(const std::string& text, const Config& c) {
  std::istringstream in(text);
  std::vector<int64_t> tokens;
  std::string word;
  while (in >> word) {
    int64_t t = 0;
    try {
      size_t used = 0;
      t = std::stoll(word, &used);
      SG_CHECK(used == word.size(), "'{}' is not a token id", word);
    } catch (const std::logic_error&) {
      SG_FAIL("'{}' is not a token id", word);
    }
    SG_CHECK(t >= 1 && t < c.vocab, "token {} is outside the vocabulary [1, {}) (0 is padding)", t,
             c.vocab);
    tokens.push_back(t);
  }
  SG_CHECK(!tokens.empty(), "empty sequence");
  if (tokens[0] != kStart) tokens.insert(tokens.begin(), kStart);
  SG_CHECK(static_cast<int64_t>(tokens.size()) <= c.length,
           "sequence of {} tokens (start symbol included) is longer than the model's length {}",
           tokens.size(), c.length);
  return tokens;
}

// "  step 1: 5  log p = -0.0012  log-probs: -9.1 -0.0012 ..." (padding, id 0, first).
void print_step_log_probs(const std::vector<int64_t>& out,
                          const std::vector<std::vector<double>>& lp) {
  for (size_t t = 0; t + 1 < out.size() && t < lp.size(); ++t) {
    const int64_t token = out[t + 1];
    fmt::print("  step {}: {}  log p = {:.6g}  log-probs: {:.6g}\n", t + 1, token, lp[t][token],
               fmt::join(lp[t], " "));
  }
}

int run_decode(const std::string& checkpoint, std::vector<std::string> sequences, bool no_cache,
               int64_t beam, bool print_logits) {
  SG_CHECK(!(print_logits && beam > 1),
           "decode: --print-logits prints greedy decoding's steps; it does not combine with "
           "--beam {}",
           beam);
  LoadedModel loaded = load_checkpoint(checkpoint);
  const Config& c = loaded.config;
  if (sequences.empty()) {
    for (std::string line; std::getline(std::cin, line);) {
      if (line.find_first_not_of(" \t\r") != std::string::npos) sequences.push_back(line);
    }
  }
  SG_CHECK(!sequences.empty(), "decode: no sequences given (as arguments or on stdin)");
  sg::NoGradGuard no_grad;
  for (const std::string& text : sequences) {
    std::vector<int64_t> tokens = parse_sequence(text, c);
    const int64_t n = static_cast<int64_t>(tokens.size());
    std::vector<int64_t> padded = tokens;
    padded.resize(static_cast<size_t>(c.length), kPad);
    sg::Tensor src = sg::from_vector(padded, {1, c.length});
    StepLogProbs log_probs;
    std::vector<int64_t> out = beam > 1 ? beam_search(*loaded.model, src, n, beam, !no_cache)
                                        : greedy_decode(*loaded.model, src, n, !no_cache,
                                                        print_logits ? &log_probs : nullptr)[0];
    out.resize(static_cast<size_t>(n));
    fmt::print("{}  ->  {}\n", join(tokens), join(out));
    if (print_logits) print_step_log_probs(out, log_probs[0]);
  }
  return 0;
}

int start_training(TrainArgs& a) {
  // Both pools: the fast kernels cut their work over their own threads (OpenBLAS then runs
  // on one), the reference kernels leave products to OpenBLAS's. OpenBLAS gets at most one
  // thread per core: its threads spin, and each takes a buffer of tens of MB (256 of them
  // exhausted a 4 GiB address space, and OpenBLAS hung in its out-of-memory path).
  const int cores = sg::cpu::available_cpus();
  sg::set_blas_threads(std::min(a.threads.value_or(2), cores));
  // Resolved now, not on the pool's first use: a bad SCRATCHGRAD_NUM_THREADS is an error
  // on the reference kernels too, which never start the pool.
  sg::cpu::set_num_threads(a.threads ? *a.threads : sg::cpu::default_num_threads());
  if (a.detect_anomaly) sg::set_detect_anomaly(true);
  Config config = configured(a.preset, *a.command, a.given);
  config.validate();
  a.options.validate();
  return run_train(config, a.options);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Train a seq2seq Transformer on the copy task and decode with it (scratchgrad)"};
  app.require_subcommand(1);
  std::string kernels;  // empty: SCRATCHGRAD_KERNELS, else fast
  TrainArgs train;
  CLI::App* train_cmd = add_train_command(app, train, kernels);
  CompareArgs compare;
  CLI::App* compare_cmd = add_compare_command(app, compare);
  CaptureArgs capture;
  CLI::App* capture_cmd = add_capture_command(app, capture);
  ModelArgs m;
  const auto [eval_cmd, decode_cmd] = add_eval_and_decode(app, m, kernels);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    // A bad SCRATCHGRAD_KERNELS is reported here, like any other bad option.
    sg::set_cpu_kernels(kernels.empty() ? sg::cpu_kernels() : sg::parse_cpu_kernels(kernels));
    if (*train_cmd) return start_training(train);
    if (*eval_cmd) return run_eval(m.checkpoint, m.samples, m.eval_seed, m.eval_metrics);
    if (*capture_cmd) {
      if (capture.init) {
        check_capture_outputs(capture.capture);  // before the new model is written
        save_initial_checkpoint(capture.capture.checkpoint,
                                configured(capture.preset, *capture.command, capture.given));
      }
      fmt::print("{}\n", capture_step(capture.capture));
      return 0;
    }
    if (*compare_cmd) {
      // Exit status 1 when they diverge, so that scripts can test it.
      const sg::nn::CaptureComparison report = sg::nn::compare_captures(
          sg::nn::load_safetensors(compare.reference), sg::nn::load_safetensors(compare.candidate),
          compare.atol, compare.rtol);
      fmt::print("{}", report.str());
      return report.first_divergent ? 1 : 0;
    }
    if (*decode_cmd)
      return run_decode(m.checkpoint, m.sequences, m.no_cache, m.beam, m.print_logits);
  } catch (const std::exception& e) {
    // With --distributed: one message, and every rank ends (sg::train::report_error).
    return sg::train::report_error(e, "copy_task");
  }
  return 0;
}
