// The copy_task command line: each subcommand's flags (CLI11), declared into its own arguments.
// main.cpp runs the subcommand that was given.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capture_step.h"
#include "config.h"
#include "trainer.h"

namespace copy_task {

// What each subcommand reads from its flags.
struct TrainArgs {
  std::string preset = "tiny";
  Config given;  // the model and training flags given, which override the preset's values
  CLI::App* command = nullptr;
  TrainOptions options;
  std::optional<int> threads;  // unset: SCRATCHGRAD_NUM_THREADS or every core, 2 BLAS threads
  bool detect_anomaly = false;
};

struct CompareArgs {
  std::string reference, candidate;
  double atol = 1e-5, rtol = 1e-4;
};

struct CaptureArgs {
  CaptureOptions capture;
  bool init = false;
  std::string preset = "tiny";
  Config given;
  CLI::App* command = nullptr;
};

// What eval and decode read: a trained model, and how to run it.
struct ModelArgs {
  std::string checkpoint;
  int64_t samples = 1000, beam = 1;
  uint64_t eval_seed = 12345;
  std::string eval_metrics;
  std::vector<std::string> sequences;
  bool no_cache = false, print_logits = false;
};

// The CPU kernels: the reference backend (the code the chapters show) or the fast one.
void add_kernels_option(CLI::App* cmd, std::string& kernels);

// The preset's config with the flags that were given on `command` (--length alone sets --min-len
// too: sequences of one length unless told otherwise).
Config configured(const std::string& preset, const CLI::App& command, Config& given);

// Each adds its subcommand to `app`, its flags writing into `a` (and `kernels`, which train, eval
// and decode share); the pair is eval's and decode's.
CLI::App* add_train_command(CLI::App& app, TrainArgs& a, std::string& kernels);
CLI::App* add_compare_command(CLI::App& app, CompareArgs& a);
CLI::App* add_capture_command(CLI::App& app, CaptureArgs& a);
std::pair<CLI::App*, CLI::App*> add_eval_and_decode(CLI::App& app, ModelArgs& a,
                                                    std::string& kernels);

}  // namespace copy_task
