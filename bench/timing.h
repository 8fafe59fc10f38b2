// Timing one call and the median of several, for the benchmarks that time calls themselves.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace sg::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_of(const std::function<void()>& fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The upper median: for an even count, the larger of the middle two.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace sg::bench
