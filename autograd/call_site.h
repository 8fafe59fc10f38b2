// CallSite: where user code called an op, for error messages and anomaly mode's reports.
//
//   Tensor log(const Tensor& x, CallSite site = CallSite::current());   // in ops.h
//   auto y = sg::log(x);   // site = this file, this line, this function
//
// A default argument is the one standard way to learn the caller's location: it is evaluated where
// the call is written. Every public op (ops.h) and Tensor method takes one as its last parameter;
// the op's first line opens a CallSiteScope with it. Scopes nest and the OUTERMOST wins, so an op
// that calls other ops (fused_linear -> linear_composed -> matmul) reports the user's line, not
// its own. An sg::Error thrown inside names that line (`matmul: shapes [2, 3] and [4, 5] cannot
// be multiplied (3 != 4) (at train.cpp:42)`), and anomaly mode names it too.
// C++ operators (a * b) cannot take an extra argument, so one of their operands is an
// Operand (tensor.h): its implicit conversion takes the default argument instead, evaluated in
// the user's expression.
#pragma once

#include <source_location>
#include <string>

namespace sg {

class CallSite {
 public:
  static CallSite current(std::source_location loc = std::source_location::current()) {
    return CallSite(loc, true);
  }
  static CallSite unknown() { return CallSite(std::source_location(), false); }
  bool known() const { return known_; }
  const std::source_location& location() const { return location_; }
  // "examples/model.cpp:42 in Tensor Model::forward(const Tensor&)", or "an unknown place".
  std::string str() const;
  // "examples/model.cpp:42" (files of this project relative to its root).
  std::string file_line() const;

 private:
  // No default constructor: x.sum({}) must mean "all dims", not an empty CallSite.
  CallSite(std::source_location loc, bool known) : location_(loc), known_(known) {}
  std::source_location location_;
  bool known_;
};

namespace detail {
bool anomaly_flag();  // anomaly mode on (autograd/anomaly.cpp)
void set_call_site(const CallSite* site);
const CallSite* call_site();
}  // namespace detail

// Makes `site` the current call site for the ops run inside this scope, unless an outer scope
// already set one.
class CallSiteScope {
 public:
  explicit CallSiteScope(const CallSite& site) {
    if (detail::call_site() != nullptr || !site.known()) return;
    detail::set_call_site(&site);
    owner_ = true;
  }
  ~CallSiteScope() {
    if (owner_) detail::set_call_site(nullptr);
  }
  CallSiteScope(const CallSiteScope&) = delete;
  CallSiteScope& operator=(const CallSiteScope&) = delete;

 private:
  bool owner_ = false;
};

}  // namespace sg
