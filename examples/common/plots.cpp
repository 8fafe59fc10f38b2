#include "plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "autograd/error.h"
#include "nn/atomic_file.h"

namespace sg::examples {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string svg_open(int width, int height) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n",
      width, height);
}

// "Nice" tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int target = 5) {
  double span = hi - lo;
  if (span <= 0) return {lo};
  double step = std::pow(10.0, std::floor(std::log10(span / target)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (span / (step * m) <= target) {
      step *= m;
      break;
    }
  }
  std::vector<double> out;
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push_back(v);
  return out;
}

// White (0) to dark blue (1).
std::string heat_color(double v) {
  v = std::clamp(v, 0.0, 1.0);
  auto ch = [&](double from, double to) { return static_cast<int>(from + (to - from) * v); };
  return fmt::format("rgb({},{},{})", ch(255, 8), ch(255, 48), ch(255, 107));
}

}  // namespace

std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series, bool log_y) {
  const int W = 640, H = 400, left = 70, right = 150, top = 40, bottom = 50;
  const int pw = W - left - right, ph = H - top - bottom;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  auto ty = [&](double y) { return log_y ? std::log10(std::max(y, 1e-12)) : y; };
  for (const Series& s : series) {
    for (double x : s.x) x0 = std::min(x0, x), x1 = std::max(x1, x);
    for (double y : s.y) y0 = std::min(y0, ty(y)), y1 = std::max(y1, ty(y));
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return top + ph - (ty(y) - y0) / (y1 - y0) * ph; };

  std::string svg = svg_open(W, H);
  svg += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n",
                     left + pw / 2, escape(title));
  for (double v : ticks(x0, x1)) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
        px(v), top, top + ph, top + ph + 16, v);
  }
  for (double v : ticks(y0, y1)) {
    double yv = log_y ? std::pow(10.0, v) : v;
    double y = top + ph - (v - y0) / (y1 - y0) * ph;
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:.3g}</text>\n",
        left, y, left + pw, left - 6, y + 4, yv);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", left,
      top, pw, ph);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2,
                     H - 12, escape(x_label));
  svg += fmt::format(
      "<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
      "{0})\">{1}</text>\n",
      top + ph / 2, escape(y_label + (log_y ? " (log scale)" : "")));
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    std::string points;
    for (size_t k = 0; k < s.x.size() && k < s.y.size(); ++k) {
      points += fmt::format("{:.1f},{:.1f} ", px(s.x[k]), py(s.y[k]));
    }
    svg +=
        fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n",
                    s.color, points);
    int ly = top + 14 + static_cast<int>(i) * 18;
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"/>"
        "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
        left + pw + 10, ly, left + pw + 30, s.color, left + pw + 36, ly + 4, escape(s.name));
  }
  return svg + "</svg>\n";
}

std::string heatmap_grid(const std::string& title, const std::vector<Heatmap>& maps, int columns,
                         const std::string& x_label, const std::string& y_label) {
  SG_CHECK(!maps.empty() && columns > 0, "heatmap_grid: nothing to draw");
  const int cell = 16, label = 22, gap = 34, head = 40;
  const int rows_n = static_cast<int>(maps[0].values.size());
  const int cols_n = rows_n == 0 ? 0 : static_cast<int>(maps[0].values[0].size());
  const int map_w = label + cols_n * cell, map_h = 18 + label + rows_n * cell;
  const int grid_rows = (static_cast<int>(maps.size()) + columns - 1) / columns;
  const int W = std::max(columns * (map_w + gap) + gap, 300);
  const int H = head + grid_rows * (map_h + gap) + 20;
  std::string svg = svg_open(W, H);
  svg += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n",
                     W / 2, escape(title));
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" fill=\"#555\" text-anchor=\"middle\">rows: {}, columns: {}</text>\n",
      W / 2, H - 6, escape(y_label), escape(x_label));
  for (size_t m = 0; m < maps.size(); ++m) {
    const Heatmap& map = maps[m];
    int ox = gap + static_cast<int>(m % columns) * (map_w + gap);
    int oy = head + static_cast<int>(m / columns) * (map_h + gap);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       ox + label + cols_n * cell / 2, oy + 12, escape(map.title));
    int gy = oy + 18 + label;
    for (int c = 0; c < cols_n && c < static_cast<int>(map.col_labels.size()); ++c) {
      svg +=
          fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                      ox + label + c * cell + cell / 2, gy - 6, escape(map.col_labels[c]));
    }
    for (int r = 0; r < rows_n; ++r) {
      if (r < static_cast<int>(map.row_labels.size())) {
        svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{}</text>",
                           ox + label - 4, gy + r * cell + cell - 4, escape(map.row_labels[r]));
      }
      for (int c = 0; c < cols_n; ++c) {
        svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>",
                           ox + label + c * cell, gy + r * cell, cell, cell,
                           heat_color(map.values[r][c]));
      }
      svg += "\n";
    }
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
        ox + label, gy, cols_n * cell, rows_n * cell);
  }
  return svg + "</svg>\n";
}

void write_file_atomically(const std::string& path, const std::string& text) {
  std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  // Every write, the flush and the close are checked; on a failure the temporary file is removed
  // and the error says what failed (e.g. "No space left on device").
  sg::nn::AtomicFile file(path, "write");
  file.write(text.data(), text.size());
  file.commit();
}

}  // namespace sg::examples
