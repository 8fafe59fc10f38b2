// Tests for train/line_chart.cpp: what the chart shows, read back from its SVG: the frame, the
// tick values and where they are drawn, one polyline per series with one point per finite value,
// each at the pixel its (x, y) maps to, the legend, a log scale, and escaped text.
#include "train/line_chart.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "tests/support/testing.h"
#include "tests/train/svg_testing.h"

namespace sg::train {
namespace {

using sg::testing::parse_svg;
using sg::testing::svg_elements;
using sg::testing::SvgElement;

struct Frame {
  double left, top, width, height;
};

Frame frame_of(const std::vector<SvgElement>& all) {
  const auto frames = svg_elements(all, "rect", "frame");
  EXPECT_EQ(frames.size(), 1u);
  const SvgElement& f = frames.at(0);
  return {f.number("x"), f.number("y"), f.number("width"), f.number("height")};
}

// A polyline's "x,y x,y ..." as pixel pairs.
std::vector<std::pair<double, double>> points_of(const SvgElement& polyline) {
  std::vector<std::pair<double, double>> out;
  std::istringstream in(polyline.attribute("points"));
  for (std::string pair; in >> pair;) {
    const size_t comma = pair.find(',');
    out.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
  }
  return out;
}

std::vector<std::string> texts(const std::vector<SvgElement>& all, const std::string& cls) {
  std::vector<std::string> out;
  for (const SvgElement& e : svg_elements(all, "text", cls)) out.push_back(e.text);
  return out;
}

TEST(TrainLineChart, AxesSeriesAndEveryPointWhereItBelongs) {
  const std::vector<double> x = {0, 2.5, 5, 7.5, 10};
  const std::vector<double> a = {1, 3, 2, 5, 4}, b = {0, 0.5, 1, 1.5, 2};
  const std::string svg = line_chart("Two curves", "step", "value",
                                     {{"first", x, a, "#d62728"}, {"second", x, b, "#2ca02c"}});
  const auto all = parse_svg(svg);
  const Frame f = frame_of(all);
  // x from 0 to 10 in steps of 2; y from 0 to 5 in steps of 1 (round values over the data).
  EXPECT_EQ(texts(all, "x-tick"), (std::vector<std::string>{"0", "2", "4", "6", "8", "10"}));
  EXPECT_EQ(texts(all, "y-tick"), (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
  // The tick lines sit where their values map: x = left + v / 10 · width.
  const auto x_lines = svg_elements(all, "line", "x-tick");
  ASSERT_EQ(x_lines.size(), 6u);
  for (size_t k = 0; k < x_lines.size(); ++k) {
    EXPECT_NEAR(x_lines[k].number("x1"), f.left + 0.2 * static_cast<double>(k) * f.width, 0.051);
  }
  const auto series = svg_elements(all, "polyline", "series");
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].attribute("stroke"), "#d62728");
  EXPECT_EQ(texts(all, "legend"), (std::vector<std::string>{"first", "second"}));
  const std::vector<const std::vector<double>*> ys = {&a, &b};
  for (size_t s = 0; s < 2; ++s) {
    const auto points = points_of(series[s]);
    ASSERT_EQ(points.size(), x.size()) << "series " << s;
    for (size_t k = 0; k < points.size(); ++k) {
      EXPECT_NEAR(points[k].first, f.left + x[k] / 10 * f.width, 0.051);
      EXPECT_NEAR(points[k].second, f.top + f.height - (*ys[s])[k] / 5 * f.height, 0.051);
    }
  }
  EXPECT_EQ(texts(all, "x-label"), (std::vector<std::string>{"step"}));
  EXPECT_EQ(texts(all, "y-label"), (std::vector<std::string>{"value"}));
}

TEST(TrainLineChart, LogScaleLeavesOutWhatItCannotPlot) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  const std::string svg =
      line_chart("loss", "step", "cross-entropy",
                 {{"loss", {1, 2, 3, 4, 5, 6, 7}, {1000, 100, nan, 10, 0, 1, inf}}},
                 /*log_y=*/true);
  const auto all = parse_svg(svg);
  const Frame f = frame_of(all);
  EXPECT_EQ(texts(all, "y-tick"), (std::vector<std::string>{"1", "10", "100", "1e+03"}));
  EXPECT_EQ(texts(all, "y-label"), (std::vector<std::string>{"cross-entropy (log scale)"}));
  const auto points = points_of(svg_elements(all, "polyline", "series").at(0));
  // NaN, 0 (no logarithm) and infinity are left out; 1000, 100, 10, 1 are evenly spaced.
  ASSERT_EQ(points.size(), 4u);
  const double xs[] = {1, 2, 4, 6}, decades[] = {3, 2, 1, 0};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_NEAR(points[k].first, f.left + (xs[k] - 1) / 5 * f.width, 0.051);
    EXPECT_NEAR(points[k].second, f.top + f.height - decades[k] / 3 * f.height, 0.051);
  }
}

TEST(TrainLineChart, LossChartEscapedTextAndEmptyCharts) {
  const auto all = parse_svg(loss_chart({2.0, 1.0, 0.5}));
  const auto points = points_of(svg_elements(all, "polyline", "series").at(0));
  EXPECT_EQ(points.size(), 3u);
  EXPECT_EQ(texts(all, "legend"), (std::vector<std::string>{"train loss"}));
  EXPECT_EQ(svg_elements(all, "text").at(0).text, "Training loss");
  // Text is escaped, and reads back as written.
  const auto odd = parse_svg(line_chart("a < b & \"c\"", "x", "y", {{"<s>", {1}, {1}}}));
  EXPECT_EQ(svg_elements(odd, "text").at(0).text, "a < b & \"c\"");
  EXPECT_EQ(texts(odd, "legend"), (std::vector<std::string>{"<s>"}));
  // Nothing to plot: still a valid picture with a frame and an empty series.
  const auto empty = parse_svg(line_chart("nothing", "x", "y", {{"none", {}, {}}}));
  EXPECT_EQ(points_of(svg_elements(empty, "polyline", "series").at(0)).size(), 0u);
  EXPECT_SG_ERROR(line_chart("t", "x", "y", {{"bad", {1, 2}, {1}}}),
                  "line_chart: series 'bad' has 2 x values and 1 y values");
}

TEST(TrainLineChart, EvaluationChartDrawsTheChosenMetrics) {
  History h;
  h.add_evaluation(100, {{"exact", 0.25}, {"token_acc", 0.5}});
  h.add_evaluation(200, {{"exact", 1.0}, {"token_acc", 1.0}});
  const auto all = parse_svg(evaluation_chart(
      h, "Held-out", "fraction", {{"token_acc", "token accuracy"}, {"exact", "exact"}}));
  EXPECT_EQ(texts(all, "legend"), (std::vector<std::string>{"token accuracy", "exact"}));
  const Frame f = frame_of(all);
  const auto series = svg_elements(all, "polyline", "series");
  ASSERT_EQ(series.size(), 2u);
  const auto exact = points_of(series[1]);
  ASSERT_EQ(exact.size(), 2u);
  EXPECT_NEAR(exact[0].first, f.left, 0.051);  // step 100: the left edge
  EXPECT_NEAR(exact[1].first, f.left + f.width, 0.051);
  EXPECT_NEAR(exact[0].second, f.top + f.height, 0.051);  // 0.25: the lowest value, the bottom
  EXPECT_NE(series[0].attribute("stroke"), series[1].attribute("stroke"));
  EXPECT_SG_ERROR(evaluation_chart(h, "t", "y", {{"wer", "WER"}}), "History: no metric 'wer'");
}

}  // namespace
}  // namespace sg::train
