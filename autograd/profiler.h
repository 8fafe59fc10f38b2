// Profiler: where does a training step spend its time? Time per op, per phase of the step.
//
//   sg::profiler::set_enabled(true);
//   { sg::profiler::Phase p("forward");  loss = model(src, tgt); }
//   { sg::profiler::Phase p("backward"); loss.backward(); }
//   for (const auto& s : sg::profiler::op_stats()) fmt::print("{} {} {}\n", s.phase, s.name, s.ms);
//
// Every public op opens an OpScope (SG_PROFILE_OP("matmul")), and the engine opens one around each
// node's backward function (named after the node). Only the OUTERMOST scope records, inclusive of
// whatever it calls: a composed op is charged to the op the caller wrote, and a backward function
// is charged to its node, not to the ops it runs. Time inside a phase that no scope covers (module
// code, the engine's bookkeeping, data preparation) is reported as "(outside ops)".
//
// Off by default; then a scope costs one load and one branch. Single-threaded use only (the
// counters are per thread, the table is the calling thread's).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sg::profiler {

namespace detail {
extern bool enabled;  // read on every op: a plain bool, no function call
void begin_op();
void end_op(std::string_view name, std::chrono::steady_clock::time_point start);
void add_flops(double flops);
}  // namespace detail

void set_enabled(bool on);
inline bool is_enabled() { return detail::enabled; }
void reset();  // forget everything measured so far

struct OpStats {
  std::string phase;  // the Phase open when the op ran ("" outside any)
  std::string name;   // the op, or "(outside ops)" for the phase's time no op covered
  int64_t calls = 0;
  double ms = 0;     // total over all calls
  double flops = 0;  // floating-point operations of the matrix products it ran (count_flops)
};
struct PhaseStats {
  std::string name;
  int64_t count = 0;  // how many times the phase was entered
  double ms = 0;
};
std::vector<OpStats> op_stats();  // sorted by phase (first entered first), then by time
std::vector<PhaseStats> phase_stats();

// Charges the ops run in this scope to `name` (a string literal: it is kept, not copied).
class Phase {
 public:
  explicit Phase(const char* name);
  ~Phase();
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

 private:
  const char* previous_ = nullptr;
  double previous_scoped_ms_ = 0;  // the enclosing phase's op time so far (phases may nest)
  bool active_ = false;
  std::chrono::steady_clock::time_point start_;
};

class OpScope {
 public:
  explicit OpScope(std::string_view name) {
    if (detail::enabled) {
      name_ = name;
      active_ = true;
      detail::begin_op();
      start_ = std::chrono::steady_clock::now();
    }
  }
  ~OpScope() {
    if (active_) detail::end_op(name_, start_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  bool active_ = false;
  std::string_view name_;
  std::chrono::steady_clock::time_point start_;
};

// Charges `flops` floating-point operations to the op being recorded (the outermost open scope):
// the ops that run matrix products count 2·M·N·K per product, so the profile shows GFLOP/s.
inline void count_flops(double flops) {
  if (detail::enabled) detail::add_flops(flops);
}

}  // namespace sg::profiler

#define SG_PROFILE_OP(name) ::sg::profiler::OpScope sg_profile_op_scope_(name)
