// The few pieces of SVG text the charts share (line_chart.h, heatmap.h): a document with a white
// background, text escaped for XML, and "nice" tick values for an axis.
#pragma once

#include <string>
#include <vector>

namespace sg::train::svg {

// <svg ...> of the given size with a white background; the caller appends elements and
// "</svg>\n".
std::string open(int width, int height);
// `text` with &, < and > (and quotes, for attributes) escaped.
std::string escape(const std::string& text);
// Round values (multiples of 1, 2 or 5 times a power of ten) covering [lo, hi], about `target`.
std::vector<double> ticks(double lo, double hi, int target = 5);

}  // namespace sg::train::svg
