#include "train/heatmap.h"

#include <algorithm>
#include <cmath>

#include "autograd/error.h"
#include "train/svg.h"

namespace sg::train {

namespace {

// White (0) to dark blue (1).
std::string heat_color(double v) {
  v = std::clamp(v, 0.0, 1.0);
  auto channel = [&](double from, double to) { return static_cast<int>(from + (to - from) * v); };
  return fmt::format("rgb({},{},{})", channel(255, 8), channel(255, 48), channel(255, 107));
}

void check_maps(const std::vector<Heatmap>& maps, int columns) {
  SG_CHECK(!maps.empty(), "heatmap_grid: no maps to draw");
  SG_CHECK(columns > 0, "heatmap_grid: columns must be positive, got {}", columns);
  const size_t rows = maps[0].values.size();
  const size_t cols = rows == 0 ? 0 : maps[0].values[0].size();
  SG_CHECK(rows > 0 && cols > 0, "heatmap_grid: map '{}' is empty", maps[0].title);
  for (const Heatmap& m : maps) {
    SG_CHECK(m.values.size() == rows, "heatmap_grid: map '{}' has {} rows, the first map {}",
             m.title, m.values.size(), rows);
    SG_CHECK(m.row_labels.size() <= rows && m.col_labels.size() <= cols,
             "heatmap_grid: map '{}' has {} row and {} column labels for {} x {} cells", m.title,
             m.row_labels.size(), m.col_labels.size(), rows, cols);
    for (size_t r = 0; r < rows; ++r) {
      SG_CHECK(m.values[r].size() == cols,
               "heatmap_grid: map '{}' row {} has {} values, the first map's rows {}", m.title, r,
               m.values[r].size(), cols);
      for (size_t c = 0; c < cols; ++c) {
        SG_CHECK(std::isfinite(m.values[r][c]), "heatmap_grid: map '{}' cell [{}, {}] is {}",
                 m.title, r, c, m.values[r][c]);
      }
    }
  }
}

}  // namespace

std::string heatmap_grid(const std::string& title, const std::vector<Heatmap>& maps, int columns,
                         const std::string& x_label, const std::string& y_label) {
  check_maps(maps, columns);
  const int cell = 16, label = 22, gap = 34, head = 40;
  const int rows_n = static_cast<int>(maps[0].values.size());
  const int cols_n = static_cast<int>(maps[0].values[0].size());
  const int map_w = label + cols_n * cell, map_h = 18 + label + rows_n * cell;
  const int grid_rows = (static_cast<int>(maps.size()) + columns - 1) / columns;
  const int W = std::max(columns * (map_w + gap) + gap, 300);
  const int H = head + grid_rows * (map_h + gap) + 20;
  std::string out = svg::open(W, H);
  out += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n",
                     W / 2, svg::escape(title));
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" fill=\"#555\" text-anchor=\"middle\">rows: {}, columns: {}</text>\n",
      W / 2, H - 6, svg::escape(y_label), svg::escape(x_label));
  for (size_t m = 0; m < maps.size(); ++m) {
    const Heatmap& map = maps[m];
    const int ox = gap + static_cast<int>(m % columns) * (map_w + gap);
    const int oy = head + static_cast<int>(m / columns) * (map_h + gap);
    out += fmt::format(
        "<g class=\"heatmap\"><text class=\"map-title\" x=\"{}\" y=\"{}\" "
        "text-anchor=\"middle\">{}</text>\n",
        ox + label + cols_n * cell / 2, oy + 12, svg::escape(map.title));
    const int gy = oy + 18 + label;
    for (size_t c = 0; c < map.col_labels.size(); ++c) {
      out += fmt::format(
          "<text class=\"col-label\" x=\"{}\" y=\"{}\" font-size=\"10\" "
          "text-anchor=\"middle\">{}</text>",
          ox + label + static_cast<int>(c) * cell + cell / 2, gy - 6,
          svg::escape(map.col_labels[c]));
    }
    for (int r = 0; r < rows_n; ++r) {
      if (r < static_cast<int>(map.row_labels.size())) {
        out += fmt::format(
            "<text class=\"row-label\" x=\"{}\" y=\"{}\" font-size=\"10\" "
            "text-anchor=\"end\">{}</text>",
            ox + label - 4, gy + r * cell + cell - 4, svg::escape(map.row_labels[r]));
      }
      for (int c = 0; c < cols_n; ++c) {
        const double v = map.values[r][c];
        out += fmt::format(
            "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
            "data-value=\"{:.4g}\"><title>{:.4g}</title></rect>",
            ox + label + c * cell, gy + r * cell, cell, cell, heat_color(v), v, v);
      }
      out += "\n";
    }
    out += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/></g>\n",
        ox + label, gy, cols_n * cell, rows_n * cell);
  }
  return out + "</svg>\n";
}

std::vector<Heatmap> heatmaps_of(const Tensor& weights, const std::vector<std::string>& titles,
                                 const std::vector<std::string>& row_labels,
                                 const std::vector<std::string>& col_labels) {
  SG_CHECK(weights.dim() == 3, "heatmaps_of: weights must be [N, T, S], got {}", weights.shape());
  const int64_t N = weights.size(0), T = weights.size(1), S = weights.size(2);
  SG_CHECK(static_cast<int64_t>(titles.size()) == N, "heatmaps_of: {} titles for {} maps",
           titles.size(), N);
  const std::vector<double> w = weights.to_vector<double>();
  std::vector<Heatmap> maps;
  for (int64_t n = 0; n < N; ++n) {
    Heatmap m{titles[static_cast<size_t>(n)], {}, row_labels, col_labels};
    for (int64_t t = 0; t < T; ++t) {
      const auto row = w.begin() + (n * T + t) * S;
      m.values.emplace_back(row, row + S);
    }
    maps.push_back(std::move(m));
  }
  return maps;
}

}  // namespace sg::train
