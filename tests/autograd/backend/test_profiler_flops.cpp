// The profiler's FLOP count: the ops that run matrix products charge 2·M·N·K per product to
// themselves (forward) and to their node (backward), so a profile shows each op's GFLOP/s.
#include <gtest/gtest.h>

#include <string_view>

#include "autograd/autograd.h"
#include "autograd/profiler.h"

namespace {

double flops_of(std::string_view phase, std::string_view op) {
  double flops = 0;
  for (const auto& s : sg::profiler::op_stats()) {
    if (s.phase == phase && s.name == op) flops += s.flops;
  }
  return flops;
}

// Turns the profiler on for one test and off again, whatever the test does.
struct ProfilerOn {
  ProfilerOn() {
    sg::profiler::reset();
    sg::profiler::set_enabled(true);
  }
  ~ProfilerOn() {
    sg::profiler::set_enabled(false);
    sg::profiler::reset();
  }
};

TEST(BackendProfiler, MatmulCountsItsProductForwardAndBothBackward) {
  ProfilerOn on;
  sg::Tensor a = sg::randn({3, 4, 5}).requires_grad_();
  sg::Tensor b = sg::randn({5, 6}).requires_grad_();
  sg::Tensor y;
  {
    sg::profiler::Phase phase("forward");
    y = sg::matmul(a, b);
  }
  {
    sg::profiler::Phase phase("backward");
    y.sum().backward();
  }
  const double product = 2.0 * 3 * 4 * 6 * 5;
  EXPECT_DOUBLE_EQ(flops_of("forward", "matmul"), product);
  EXPECT_DOUBLE_EQ(flops_of("backward", "matmul"), 2 * product);  // dA and dB
  EXPECT_DOUBLE_EQ(flops_of("backward", "sum"), 0.0);             // no product there
}

TEST(BackendProfiler, FusedLinearCountsEveryProductItRuns) {
  ProfilerOn on;
  sg::Tensor x = sg::randn({7, 8}).requires_grad_();
  sg::Tensor w = sg::randn({4, 8}).requires_grad_();
  sg::Tensor bias = sg::randn({4}).requires_grad_();
  sg::Tensor y;
  {
    sg::profiler::Phase phase("forward");
    y = sg::fused_linear(x, w, bias);
  }
  {
    sg::profiler::Phase phase("backward");
    y.sum().backward();
  }
  // Forward x·Wᵀ, backward dx = g·W and dW = gᵀ·x: fused or composed, the same products.
  const double product = 2.0 * 7 * 8 * 4;
  double forward = 0, backward = 0;
  for (const auto& s : sg::profiler::op_stats())
    (s.phase == "forward" ? forward : backward) += s.flops;
  EXPECT_DOUBLE_EQ(forward, product);
  EXPECT_DOUBLE_EQ(backward, 2 * product);
}

TEST(BackendProfiler, CountsNothingWhenOffAndForgetsOnReset) {
  sg::profiler::reset();
  sg::Tensor y = sg::matmul(sg::randn({2, 3}), sg::randn({3, 2}));
  EXPECT_TRUE(sg::profiler::op_stats().empty());
  {
    ProfilerOn on;
    y = sg::matmul(sg::randn({2, 3}), sg::randn({3, 2}));
    EXPECT_DOUBLE_EQ(flops_of("", "matmul"), 24.0);
    sg::profiler::reset();
    EXPECT_TRUE(sg::profiler::op_stats().empty());
    sg::profiler::count_flops(1e6);  // outside every op: nothing to charge, nothing recorded
    EXPECT_TRUE(sg::profiler::op_stats().empty());
  }
}

}  // namespace
