// Anomaly mode: find the first op whose output, or whose backward's gradient, is NaN or Inf.
//
//   { sg::DetectAnomalyGuard anomaly; auto loss = model(x); loss.backward(); }
//   // or run any program with SCRATCHGRAD_DETECT_ANOMALY=1
//
// While it is on, every op checks its output and the engine checks every gradient a backward
// function returns; the first non-finite value throws an sg::Error that names the op, its inputs'
// shapes and dtypes, and the line of user code that called it (autograd/call_site.h). For a bad
// gradient it names the forward op whose backward produced it and the line that created that op.
// Off, it costs one flag test per op. On, each check reads the whole tensor (and copies it to the
// CPU first on a GPU): a debugging tool, as torch.autograd.detect_anomaly is.
#pragma once

#include <string_view>
#include <vector>

#include "autograd/call_site.h"
#include "autograd/tensor.h"

namespace sg {

class Node;

// Whether anomaly mode is on: set_detect_anomaly(true), a DetectAnomalyGuard, or
// SCRATCHGRAD_DETECT_ANOMALY=1 in the environment (read once, at the first query).
bool is_anomaly_enabled();
void set_detect_anomaly(bool enabled);

namespace detail {
// SCRATCHGRAD_DETECT_ANOMALY's value read: null, "" or "0" off, "1" on, else an error.
bool detect_anomaly_setting(const char* value);
}  // namespace detail

class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool enabled = true) : previous_(is_anomaly_enabled()) {
    set_detect_anomaly(enabled);
  }
  ~DetectAnomalyGuard() { set_detect_anomaly(previous_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool previous_;
};

namespace detail {
// Throws if `out` holds a NaN or Inf: "anomaly: op 'log' produced NaN ...". Called by record().
void check_forward(std::string_view op, const Tensor& out, const std::vector<Tensor>& inputs);
// Throws if a gradient `node`'s backward returned holds a NaN or Inf. Called by Node::apply, where
// the engine receives a node's gradients.
void check_backward(const Node& node, const std::vector<Tensor>& grads);
// While one lives, check_forward does nothing: a backward function's gradients are checked as a
// whole by check_backward, which names the node.
class BackwardScope {
 public:
  BackwardScope();
  ~BackwardScope();
  BackwardScope(const BackwardScope&) = delete;
  BackwardScope& operator=(const BackwardScope&) = delete;

 private:
  bool previous_;
};
}  // namespace detail

}  // namespace sg
