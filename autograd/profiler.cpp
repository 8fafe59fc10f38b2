#include "autograd/profiler.h"

#include <algorithm>
#include <map>
#include <utility>

namespace sg::profiler {

namespace detail {
bool enabled = false;
}

namespace {

using Clock = std::chrono::steady_clock;

struct Totals {
  int64_t calls = 0;
  double ms = 0;
  double flops = 0;
};

struct State {
  int depth = 0;                    // open OpScopes: only depth 0 records
  const char* phase = "";           // the innermost open Phase
  double scoped_ms_in_phase = 0;    // op time recorded since the current Phase opened
  double open_op_flops = 0;         // counted inside the open outermost OpScope so far
  std::vector<std::string> phases;  // in the order first entered
  std::map<std::pair<std::string, std::string>, Totals> ops;
  std::map<std::string, Totals> phase_totals;
};

State& state() {
  static State s;
  return s;
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

void detail::begin_op() { ++state().depth; }

void detail::end_op(std::string_view name, Clock::time_point start) {
  State& s = state();
  if (--s.depth > 0) return;  // nested: the outermost scope's time includes this one
  const double ms = ms_since(start);
  Totals& t = s.ops[{s.phase, std::string(name)}];
  ++t.calls;
  t.ms += ms;
  t.flops += s.open_op_flops;
  s.open_op_flops = 0;
  s.scoped_ms_in_phase += ms;
}

void detail::add_flops(double flops) {
  State& s = state();
  if (s.depth > 0) s.open_op_flops += flops;  // outside every op scope there is no op to charge
}

void set_enabled(bool on) { detail::enabled = on; }

void reset() {
  State& s = state();
  s.phases.clear();
  s.ops.clear();
  s.phase_totals.clear();
  s.scoped_ms_in_phase = 0;
  s.open_op_flops = 0;
}

Phase::Phase(const char* name) {
  if (!detail::enabled) return;
  State& s = state();
  active_ = true;
  previous_ = s.phase;
  previous_scoped_ms_ = s.scoped_ms_in_phase;
  s.phase = name;
  s.scoped_ms_in_phase = 0;
  if (std::find(s.phases.begin(), s.phases.end(), name) == s.phases.end()) {
    s.phases.emplace_back(name);
  }
  start_ = Clock::now();
}

Phase::~Phase() {
  if (!active_) return;
  State& s = state();
  const double ms = ms_since(start_);
  Totals& total = s.phase_totals[s.phase];
  ++total.calls;
  total.ms += ms;
  Totals& outside = s.ops[{s.phase, "(outside ops)"}];
  ++outside.calls;
  outside.ms += std::max(0.0, ms - s.scoped_ms_in_phase);
  s.phase = previous_;
  // The enclosing phase reports this one's time under this one's name, not as its own "outside".
  s.scoped_ms_in_phase = previous_scoped_ms_ + ms;
}

std::vector<OpStats> op_stats() {
  const State& s = state();
  std::vector<OpStats> out;
  for (const auto& [key, t] : s.ops) {
    out.push_back({key.first, key.second, t.calls, t.ms, t.flops});
  }
  auto rank = [&](const std::string& phase) {
    auto it = std::find(s.phases.begin(), s.phases.end(), phase);
    return it - s.phases.begin();
  };
  std::sort(out.begin(), out.end(), [&](const OpStats& a, const OpStats& b) {
    if (a.phase != b.phase) return rank(a.phase) < rank(b.phase);
    return a.ms > b.ms;
  });
  return out;
}

std::vector<PhaseStats> phase_stats() {
  const State& s = state();
  std::vector<PhaseStats> out;
  for (const std::string& name : s.phases) {
    auto it = s.phase_totals.find(name);
    if (it != s.phase_totals.end()) out.push_back({name, it->second.calls, it->second.ms});
  }
  return out;
}

}  // namespace sg::profiler
