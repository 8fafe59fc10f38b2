#include "train/svg.h"

#include <cmath>

#include <fmt/format.h>

namespace sg::train::svg {

std::string open(int width, int height) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height);
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> ticks(double lo, double hi, int target) {
  const double span = hi - lo;
  if (!(span > 0) || !std::isfinite(span)) return {lo};
  double step = std::pow(10.0, std::floor(std::log10(span / target)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (span / (step * m) <= target) {
      step *= m;
      break;
    }
  }
  std::vector<double> out;
  // Counted, not accumulated: v += step would drift away from round values.
  const double first = std::ceil(lo / step);
  for (int k = 0;; ++k) {
    const double v = (first + k) * step;
    if (v > hi + 1e-9 * span) break;
    out.push_back(v);
  }
  return out;
}

}  // namespace sg::train::svg
