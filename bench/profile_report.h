// The per-op profile of bench_copy_task --profile, as a text table and as an SVG bar chart.
#pragma once

#include <string>
#include <vector>

#include "autograd/profiler.h"

// One row per (phase, op): calls and milliseconds per step, share of the step; phases in order.
std::string profile_table(const std::vector<sg::profiler::OpStats>& ops,
                          const std::vector<sg::profiler::PhaseStats>& phases, int steps);

// Horizontal bars, one per (phase, op) above 1% of the step, coloured by phase, longest first.
std::string profile_svg(const std::vector<sg::profiler::OpStats>& ops, int steps,
                        const std::string& title);
