#include "autograd/anomaly.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "autograd/error.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"

namespace sg {

// Unset, empty or "0": off; "1": on. Anything else ("false", "yes") is an error, as the other
// variables' bad values are: a word read as "on" slowed every op of a run silently.
bool detail::detect_anomaly_setting(const char* value) {
  if (value == nullptr || std::strcmp(value, "") == 0 || std::strcmp(value, "0") == 0) return false;
  SG_CHECK(std::strcmp(value, "1") == 0, "SCRATCHGRAD_DETECT_ANOMALY must be 0 or 1, got '{}'",
           excerpt(value));
  return true;
}

namespace {

// Process-wide, as torch.autograd.set_detect_anomaly: a guard in main() covers every thread.
std::atomic<bool>& anomaly_state() {
  static std::atomic<bool> state{
      detail::detect_anomaly_setting(std::getenv("SCRATCHGRAD_DETECT_ANOMALY"))};
  return state;
}

thread_local const CallSite* current_site = nullptr;
// The check itself runs ops (a copy to the CPU, a conversion); they must not be checked in turn.
thread_local bool checking = false;
thread_local bool in_backward = false;

struct NonFinite {
  int64_t count = 0;
  int64_t first = -1;  // flat row-major index of the first one
  bool has_nan = false;
};

NonFinite find_non_finite(const Tensor& t) {
  NonFinite found;
  if (!t.defined() || !t.is_floating_point() || t.numel() == 0) return found;
  const std::vector<double> values = t.to_vector<double>();
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) continue;
    if (found.count++ == 0) found.first = static_cast<int64_t>(i);
    found.has_nan = found.has_nan || std::isnan(values[i]);
  }
  return found;
}

std::vector<int64_t> unflatten(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

std::string describe(const NonFinite& found, const Tensor& t) {
  return fmt::format("{} ({} of {} elements non-finite, the first at index {})",
                     found.has_nan ? "NaN" : "Inf", found.count, t.numel(),
                     unflatten(found.first, t.shape()));
}

std::string describe_inputs(const std::vector<Tensor>& inputs) {
  std::vector<std::string> parts;
  for (const Tensor& in : inputs) {
    parts.push_back(in.defined() ? fmt::format("{} {}", in.dtype(), in.shape()) : "none");
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

class CheckingScope {
 public:
  CheckingScope() { checking = true; }
  ~CheckingScope() { checking = false; }
  CheckingScope(const CheckingScope&) = delete;
  CheckingScope& operator=(const CheckingScope&) = delete;

 private:
  NoGradGuard no_grad_;
};

}  // namespace

std::string CallSite::str() const {
  if (!known_) {
    return "an unknown place (a C++ operator such as a * b, called outside any op that records "
           "its caller; write sg::mul(a, b) to have the line)";
  }
  return fmt::format("{} in {}", file_line(), location_.function_name());
}

std::string CallSite::file_line() const {
  if (!known_) return "an unknown place";
  // Paths inside this project are shown relative to its root (nn/linear.cpp:40), others whole; a
  // path the build gave relative to its folder (../tests/x.cpp from build/) loses its ../ too.
  std::string_view file = location_.file_name();
  const std::string_view root = SG_SOURCE_DIR "/";
  if (file.starts_with(root)) file.remove_prefix(root.size());
  while (file.starts_with("../")) file.remove_prefix(3);
  return fmt::format("{}:{}", file, location_.line());
}

bool is_anomaly_enabled() { return anomaly_state().load(std::memory_order_relaxed); }
void set_detect_anomaly(bool enabled) { anomaly_state().store(enabled, std::memory_order_relaxed); }

namespace detail {

bool anomaly_flag() { return anomaly_state().load(std::memory_order_relaxed); }
void set_call_site(const CallSite* site) { current_site = site; }
const CallSite* call_site() { return current_site; }

std::string with_call_site(std::string message) {
  if (current_site == nullptr) return message;
  const std::string at = fmt::format(" (at {})", current_site->file_line());
  // A message caught and thrown again inside the same op already ends with it.
  if (!message.ends_with(at)) message += at;
  return message;
}

BackwardScope::BackwardScope() : previous_(in_backward) { in_backward = true; }
BackwardScope::~BackwardScope() { in_backward = previous_; }

void check_forward(std::string_view op, const Tensor& out, const std::vector<Tensor>& inputs) {
  if (checking || in_backward) return;
  // A view computes nothing: its values are checked where they were computed (and an op may view
  // its own output buffer before writing it).
  for (const Tensor& in : inputs) {
    if (in.defined() && out.impl()->storage == in.impl()->storage) return;
  }
  NonFinite found;
  {
    CheckingScope scope;
    found = find_non_finite(out);
  }
  if (found.count == 0) return;
  const CallSite site = current_site != nullptr ? *current_site : CallSite::unknown();
  SG_FAIL("anomaly: '{}' produced {} in its output {} {}; inputs: {}; called at {}", op,
          describe(found, out), out.dtype(), out.shape(), describe_inputs(inputs), site.str());
}

void check_backward(const Node& node, const std::vector<Tensor>& grads) {
  if (checking) return;
  for (size_t i = 0; i < grads.size(); ++i) {
    NonFinite found;
    {
      CheckingScope scope;
      found = find_non_finite(grads[i]);
    }
    if (found.count == 0) continue;
    std::vector<std::string> inputs;
    for (const Edge& edge : node.edges()) {
      inputs.push_back(edge.needs_grad() ? fmt::format("{} {}", edge.dtype, edge.shape) : "-");
    }
    SG_FAIL(
        "anomaly: the backward of '{}' returned {} in the gradient of its input {} (of {}; "
        "inputs: {}; output {}); the forward '{}' was called at {}",
        node.name(), describe(found, grads[i]), i, grads.size(), fmt::join(inputs, ", "),
        node.output_shape(), node.name(), node.created_at().str());
  }
}

}  // namespace detail

}  // namespace sg
