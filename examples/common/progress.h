// Training progress: a live bar on a terminal, plain periodic lines otherwise (logs, CI).
//   [=========>          ] 450/1000 loss 0.412 acc 91.3% lr 8.9e-04 38.2 steps/s ETA 14s
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sg::examples {

struct StepStats {
  int64_t step = 0;
  double loss = 0, token_accuracy = 0, lr = 0;
};

class Progress {
 public:
  // interactive: redraw one line in place (true when stderr is a terminal).
  Progress(int64_t first_step, int64_t total_steps, bool interactive, int64_t print_every);
  void update(const StepStats& stats);
  // A line that must stay on screen (evaluation results); the bar is redrawn below it.
  void message(const std::string& text);
  void finish();
  static bool stderr_is_terminal();

 private:
  std::string line(const StepStats& s) const;
  int64_t first_step_, total_steps_;
  bool interactive_;
  int64_t print_every_;
  std::chrono::steady_clock::time_point start_;
  StepStats last_;
  bool bar_drawn_ = false;
};

}  // namespace sg::examples
