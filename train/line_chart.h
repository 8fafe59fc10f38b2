// Line charts as SVG text, for training curves (loss.svg, accuracy.svg): shared axes with round
// tick values, a legend, optionally a log10 y axis. Open the file in a browser, or convert it to
// PNG (rsvg-convert, from Debian's librsvg2-bin).
//
//   std::string svg = sg::train::line_chart("Held-out accuracy", "step", "fraction",
//       {{"exact match", steps, exact, "#1f77b4"}, {"token accuracy", steps, tokens, "#2ca02c"}});
//   sg::nn::write_file_atomically(dir + "/accuracy.svg", svg);
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "train/history.h"

namespace sg::train {

struct Series {
  std::string name;
  std::vector<double> x, y;  // one point per pair; non-finite ones (and y <= 0 on a log scale)
                             // are left out
  std::string color = "#1f77b4";
};

// One chart: a frame, x and y ticks with their values, one polyline per series and its legend
// entry. log_y plots y on a log10 scale (for losses).
std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series,
                       bool log_y = false);

// The training loss of step 1, 2, ... on a log scale: the loss.svg of a run.
std::string loss_chart(const std::vector<double>& losses);

// A run's evaluations: one series per metric, {name in the history, label}, over the steps of
// the evaluations.
std::string evaluation_chart(const History& history, const std::string& title,
                             const std::string& y_label,
                             const std::vector<std::pair<std::string, std::string>>& metrics);

}  // namespace sg::train
