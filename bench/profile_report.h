// The per-op profile of bench_copy_task --profile, as a text table and as an SVG bar chart.
#pragma once

#include <string>
#include <vector>

#include "autograd/profiler.h"

// One row per (phase, op): calls and milliseconds per step, share of the step; phases in order.
// The ops that ran matrix products (sg::profiler::count_flops): their FLOPs and their time, per
// step. Their rate counts everything those ops do (a bias add, packing, dispatch), so it is what
// the products cost the step, not the BLAS kernel's rate alone.
struct ProductStats {
  double gflop_per_step = 0, ms_per_step = 0;
  double gflops() const { return ms_per_step > 0 ? gflop_per_step / ms_per_step * 1e3 : 0; }
};
ProductStats product_stats(const std::vector<sg::profiler::OpStats>& ops, int steps);

std::string profile_table(const std::vector<sg::profiler::OpStats>& ops,
                          const std::vector<sg::profiler::PhaseStats>& phases, int steps);

// Horizontal bars, one per (phase, op) above 1% of the step, coloured by phase, longest first.
std::string profile_svg(const std::vector<sg::profiler::OpStats>& ops, int steps,
                        const std::string& title);
