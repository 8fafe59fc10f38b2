#include "profile_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace {

double total_ms(const std::vector<sg::profiler::OpStats>& ops) {
  double total = 0;
  for (const auto& s : ops) total += s.ms;
  return total;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string profile_table(const std::vector<sg::profiler::OpStats>& ops,
                          const std::vector<sg::profiler::PhaseStats>& phases, int steps) {
  const double total = total_ms(ops);
  std::string out = fmt::format("{:<10} {:<22} {:>9} {:>10} {:>7} {:>9}\n", "phase", "op",
                                "calls/step", "ms/step", "share", "GFLOP/s");
  std::string phase;
  for (const auto& s : ops) {
    if (s.phase != phase && !phase.empty()) out += "\n";
    phase = s.phase;
    const std::string rate = s.flops > 0 ? fmt::format("{:9.1f}", s.flops / s.ms * 1e-6) : "";
    out += fmt::format("{:<10} {:<22} {:>9.1f} {:>10.3f} {:>6.1f}% {}\n", s.phase, s.name,
                       static_cast<double>(s.calls) / steps, s.ms / steps,
                       total > 0 ? 100.0 * s.ms / total : 0.0, rate);
  }
  out += "\nphases:";
  for (const auto& p : phases) out += fmt::format("  {} {:.3f} ms", p.name, p.ms / steps);
  out += fmt::format("  (total {:.3f} ms per step)\n", total / steps);
  const ProductStats products = product_stats(ops, steps);
  if (products.gflop_per_step > 0) {
    out += fmt::format(
        "matrix products: {:.2f} GFLOP per step in {:.3f} ms of the ops that run them "
        "({:.1f}% of the step): {:.1f} GFLOP/s\n",
        products.gflop_per_step, products.ms_per_step,
        total > 0 ? 100.0 * products.ms_per_step * steps / total : 0.0, products.gflops());
  }
  return out;
}

ProductStats product_stats(const std::vector<sg::profiler::OpStats>& ops, int steps) {
  ProductStats p;
  for (const auto& s : ops) {
    if (s.flops <= 0) continue;
    p.gflop_per_step += s.flops * 1e-9 / steps;
    p.ms_per_step += s.ms / steps;
  }
  return p;
}

std::string profile_svg(const std::vector<sg::profiler::OpStats>& ops, int steps,
                        const std::string& title) {
  const double total = total_ms(ops);
  std::vector<sg::profiler::OpStats> rows;
  for (const auto& s : ops) {
    if (total > 0 && s.ms / total >= 0.01) rows.push_back(s);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  const std::vector<std::string> palette = {"#1f77b4", "#d62728", "#2ca02c",
                                            "#ff7f0e", "#9467bd", "#8c564b"};
  std::map<std::string, std::string> color;
  for (const auto& s : ops) {
    if (!color.count(s.phase)) color[s.phase] = palette[color.size() % palette.size()];
  }
  const int row_h = 20, left = 250, bar_w = 500, top = 60;
  const int height = top + row_h * static_cast<int>(rows.size()) + 50;
  const double max_ms = rows.empty() ? 1.0 : rows.front().ms / steps;
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)"
      "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      R"(<text x="10" y="22" font-size="15">{}</text>)"
      "\n"
      R"(<text x="10" y="42" fill="#555">ms per step; ops below 1% of the step ({:.2f} ms in all) are left out</text>)"
      "\n",
      left + bar_w + 120, height, escape(title), total / steps);
  int y = top;
  for (const auto& s : rows) {
    const double ms = s.ms / steps;
    const double w = bar_w * ms / max_ms;
    svg += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{} · {}</text>)"
                       R"(<rect x="{}" y="{}" width="{:.1f}" height="{}" fill="{}"/>)"
                       R"(<text x="{:.1f}" y="{}">{:.3f} ms ({:.1f}%)</text>)"
                       "\n",
                       left - 6, y + 14, escape(s.phase), escape(s.name), left, y + 3, w, row_h - 6,
                       color[s.phase], left + w + 4, y + 14, ms, 100.0 * s.ms / total);
    y += row_h;
  }
  int x = 10;
  for (const auto& [phase, c] : color) {
    svg += fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/>)"
                       R"(<text x="{}" y="{}">{}</text>)"
                       "\n",
                       x, y + 14, c, x + 16, y + 24, escape(phase));
    x += 20 + 8 * static_cast<int>(phase.size()) + 20;
  }
  return svg + "</svg>\n";
}
