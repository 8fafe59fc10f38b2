// Pictures as SVG text, written without extra dependencies: line charts for the training curves
// and heatmaps for attention weights. Open the .svg files in a browser, or convert them to PNG
// (rsvg-convert, from Debian's librsvg2-bin).
#pragma once

#include <string>
#include <vector>

namespace sg::examples {

struct Series {
  std::string name;
  std::vector<double> x, y;
  std::string color = "#1f77b4";
};

// One chart with shared axes; log_y plots y on a log10 scale (for losses).
std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series,
                       bool log_y = false);

struct Heatmap {
  std::string title;
  std::vector<std::vector<double>> values;  // rows x cols, in [0, 1] (attention probabilities)
  std::vector<std::string> row_labels, col_labels;
};

// Heatmaps laid out in a grid of `columns` per row (e.g. one per head, one row per layer).
std::string heatmap_grid(const std::string& title, const std::vector<Heatmap>& maps, int columns,
                         const std::string& x_label, const std::string& y_label);

// Writes text to path through a temporary file and a rename (never a half-written file).
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace sg::examples
