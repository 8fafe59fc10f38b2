#include "train/line_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "autograd/error.h"
#include "train/svg.h"

namespace sg::train {

namespace {

struct Point {
  double x, y;  // y already on the chart's scale (log10 for log_y)
};

// The series' plottable points: finite, and positive on a log scale.
std::vector<Point> points_of(const Series& s, bool log_y) {
  SG_CHECK(s.x.size() == s.y.size(), "line_chart: series '{}' has {} x values and {} y values",
           s.name, s.x.size(), s.y.size());
  std::vector<Point> points;
  for (size_t k = 0; k < s.x.size(); ++k) {
    const double y = log_y ? std::log10(s.y[k]) : s.y[k];
    if (std::isfinite(s.x[k]) && std::isfinite(y)) points.push_back({s.x[k], y});
  }
  return points;
}

}  // namespace

std::string line_chart(const std::string& title, const std::string& x_label,
                       const std::string& y_label, const std::vector<Series>& series, bool log_y) {
  const int W = 640, H = 400, left = 70, right = 150, top = 40, bottom = 50;
  const int pw = W - left - right, ph = H - top - bottom;
  std::vector<std::vector<Point>> points;
  const double inf = std::numeric_limits<double>::infinity();
  double x0 = inf, x1 = -inf, y0 = inf, y1 = -inf;
  for (const Series& s : series) {
    points.push_back(points_of(s, log_y));
    for (const Point& p : points.back()) {
      x0 = std::min(x0, p.x), x1 = std::max(x1, p.x);
      y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
    }
  }
  if (x0 > x1) x0 = 0, x1 = 1;  // nothing to plot: an empty frame
  if (y0 > y1) y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return top + ph - (y - y0) / (y1 - y0) * ph; };

  std::string out = svg::open(W, H);
  out += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n",
                     left + pw / 2, svg::escape(title));
  for (double v : svg::ticks(x0, x1)) {
    out += fmt::format(
        "<line class=\"x-tick\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" "
        "stroke=\"#ddd\"/><text class=\"x-tick\" x=\"{0:.1f}\" y=\"{3}\" "
        "text-anchor=\"middle\">{4:g}</text>\n",
        px(v), top, top + ph, top + ph + 16, v);
  }
  for (double v : svg::ticks(y0, y1)) {
    const double shown = log_y ? std::pow(10.0, v) : v;
    out += fmt::format(
        "<line class=\"y-tick\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" "
        "stroke=\"#ddd\"/><text class=\"y-tick\" x=\"{3}\" y=\"{4:.1f}\" "
        "text-anchor=\"end\">{5:.3g}</text>\n",
        left, py(v), left + pw, left - 6, py(v) + 4, shown);
  }
  out += fmt::format(
      "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"#333\"/>\n",
      left, top, pw, ph);
  out += fmt::format("<text class=\"x-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     left + pw / 2, H - 12, svg::escape(x_label));
  out += fmt::format(
      "<text class=\"y-label\" x=\"16\" y=\"{0}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 16 {0})\">{1}</text>\n",
      top + ph / 2, svg::escape(y_label + (log_y ? " (log scale)" : "")));
  for (size_t i = 0; i < series.size(); ++i) {
    std::string coordinates;
    for (const Point& p : points[i]) coordinates += fmt::format("{:.1f},{:.1f} ", px(p.x), py(p.y));
    if (!coordinates.empty()) coordinates.pop_back();
    out += fmt::format(
        "<polyline class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" "
        "points=\"{}\"><title>{}</title></polyline>\n",
        svg::escape(series[i].color), coordinates, svg::escape(series[i].name));
    const int ly = top + 14 + static_cast<int>(i) * 18;
    out += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"/>"
        "<text class=\"legend\" x=\"{4}\" y=\"{5}\">{6}</text>\n",
        left + pw + 10, ly, left + pw + 30, svg::escape(series[i].color), left + pw + 36, ly + 4,
        svg::escape(series[i].name));
  }
  return out + "</svg>\n";
}

std::string loss_chart(const std::vector<double>& losses) {
  std::vector<double> steps(losses.size());
  for (size_t i = 0; i < steps.size(); ++i) steps[i] = static_cast<double>(i + 1);
  return line_chart("Training loss", "step", "cross-entropy",
                    {{"train loss", steps, losses, "#d62728"}}, /*log_y=*/true);
}

std::string evaluation_chart(const History& history, const std::string& title,
                             const std::string& y_label,
                             const std::vector<std::pair<std::string, std::string>>& metrics) {
  static const char* const kColors[] = {"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
  std::vector<Series> series;
  for (size_t i = 0; i < metrics.size(); ++i) {
    const auto& [name, label] = metrics[i];
    series.push_back({label, history.eval_steps, history.eval(name), kColors[i % 5]});
  }
  return line_chart(title, "step", y_label, series);
}

}  // namespace sg::train
