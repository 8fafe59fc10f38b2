#include "progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace sg::examples {

Progress::Progress(int64_t first_step, int64_t total_steps, bool interactive, int64_t print_every)
    : first_step_(first_step),
      total_steps_(total_steps),
      interactive_(interactive),
      print_every_(std::max<int64_t>(print_every, 1)),
      start_(std::chrono::steady_clock::now()) {}

bool Progress::stderr_is_terminal() { return ::isatty(::fileno(stderr)) == 1; }

std::string Progress::line(const StepStats& s) const {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double done = static_cast<double>(s.step - first_step_);
  double rate = elapsed > 0 ? done / elapsed : 0;
  double eta = rate > 0 ? static_cast<double>(total_steps_ - s.step) / rate : 0;
  return fmt::format("{}/{} loss {:.4f} acc {:5.1f}% lr {:.2e} {:.1f} steps/s ETA {:.0f}s", s.step,
                     total_steps_, s.loss, 100 * s.token_accuracy, s.lr, rate, eta);
}

void Progress::update(const StepStats& stats) {
  last_ = stats;
  if (interactive_) {
    const int width = 24;
    int filled = static_cast<int>(width * static_cast<double>(stats.step) /
                                  static_cast<double>(std::max<int64_t>(total_steps_, 1)));
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < width) bar += '>';
    bar.resize(width, ' ');
    fmt::print(stderr, "\r\033[K[{}] {}", bar, line(stats));
    std::fflush(stderr);
    bar_drawn_ = true;
  } else if (stats.step % print_every_ == 0 || stats.step == total_steps_) {
    fmt::print(stderr, "step {}\n", line(stats));
  }
}

void Progress::message(const std::string& text) {
  if (interactive_ && bar_drawn_) fmt::print(stderr, "\r\033[K");
  fmt::print(stderr, "{}\n", text);
  if (interactive_ && bar_drawn_) update(last_);
}

void Progress::finish() {
  if (interactive_ && bar_drawn_) fmt::print(stderr, "\n");
  bar_drawn_ = false;
}

}  // namespace sg::examples
