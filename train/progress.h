// Training progress on standard error: a bar redrawn in place on a terminal, plain lines every
// `print_every` steps otherwise (a log file, CI), with the loss, token accuracy, lr, speed and ETA:
//   [=========>              ] 450/1000 loss 0.4120 acc  91.3% lr 8.90e-04 38.2 steps/s ETA 14s
//   step 500/1000 loss 0.3871 acc  92.0% lr 8.44e-04 38.5 steps/s ETA 13s     (not a terminal)
//
//   sg::train::Progress progress({.first_step = state.step, .total_steps = steps,
//                                 .interactive = sg::train::Progress::stderr_is_terminal(),
//                                 .print_every = 100});
//   progress.update({step, loss, accuracy, lr});
//   progress.message("step 500  held-out exact match 99.5%");   // a line that stays
//   progress.finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace sg::train {

struct StepStats {
  int64_t step = 0;
  double loss = 0, token_accuracy = 0, lr = 0;  // token_accuracy NaN: the task has none
};

struct ProgressOptions {
  int64_t first_step = 0;  // steps done before this process started (a resumed run)
  int64_t total_steps = 0;
  bool interactive = false;   // redraw one line in place (stderr is a terminal)
  int64_t print_every = 100;  // otherwise: a line every this many steps, and at the last
  std::FILE* out = stderr;
  // Seconds since some fixed moment; the steady clock unless a test sets it.
  std::function<double()> clock;
};

class Progress {
 public:
  explicit Progress(ProgressOptions options);
  void update(const StepStats& stats);
  // A line that must stay on screen (evaluation results); the bar is redrawn below it.
  void message(const std::string& text);
  void finish();
  static bool stderr_is_terminal();

  // "450/1000 loss 0.4120 acc  91.3% lr 8.90e-04 38.2 steps/s ETA 14s": speed and ETA from the
  // steps this process has run.
  std::string line(const StepStats& stats) const;

 private:
  double now() const;
  ProgressOptions o_;
  double start_;
  StepStats last_;
  bool bar_drawn_ = false;
};

}  // namespace sg::train
