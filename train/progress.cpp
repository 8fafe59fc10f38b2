#include "train/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace sg::train {

Progress::Progress(ProgressOptions options) : o_(std::move(options)) {
  o_.print_every = std::max<int64_t>(o_.print_every, 1);
  start_ = now();
}

bool Progress::stderr_is_terminal() { return ::isatty(::fileno(stderr)) == 1; }

double Progress::now() const {
  if (o_.clock) return o_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Progress::line(const StepStats& s) const {
  const double elapsed = now() - start_;
  const double done = static_cast<double>(s.step - o_.first_step);
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double eta = rate > 0 ? static_cast<double>(o_.total_steps - s.step) / rate : 0;
  const std::string accuracy =
      std::isnan(s.token_accuracy) ? "" : fmt::format(" acc {:5.1f}%", 100 * s.token_accuracy);
  return fmt::format("{}/{} loss {:.4f}{} lr {:.2e} {:.1f} steps/s ETA {:.0f}s", s.step,
                     o_.total_steps, s.loss, accuracy, s.lr, rate, eta);
}

void Progress::update(const StepStats& stats) {
  last_ = stats;
  if (o_.interactive) {
    const int width = 24;
    const double fraction =
        static_cast<double>(stats.step) / static_cast<double>(std::max<int64_t>(o_.total_steps, 1));
    const int filled = std::clamp(static_cast<int>(width * fraction), 0, width);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < width) bar += '>';
    bar.resize(width, ' ');
    fmt::print(o_.out, "\r\033[K[{}] {}", bar, line(stats));
    std::fflush(o_.out);
    bar_drawn_ = true;
  } else if (stats.step % o_.print_every == 0 || stats.step == o_.total_steps) {
    fmt::print(o_.out, "step {}\n", line(stats));
  }
}

void Progress::message(const std::string& text) {
  if (o_.interactive && bar_drawn_) fmt::print(o_.out, "\r\033[K");
  fmt::print(o_.out, "{}\n", text);
  if (o_.interactive && bar_drawn_) update(last_);
}

void Progress::finish() {
  if (o_.interactive && bar_drawn_) fmt::print(o_.out, "\n");
  bar_drawn_ = false;
}

}  // namespace sg::train
