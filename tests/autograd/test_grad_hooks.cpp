// Post-accumulate-grad hooks (autograd/grad_hooks.h): when the engine calls them, how often, and
// what they see.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "autograd/grad_hooks.h"

#include "tests/support/testing.h"

namespace sg {
namespace {

TEST(EnginePostAccumulateGradHookTest, RunsOnceAfterTheLeafsGradientIsComplete) {
  // x is used three times (x·x and + x): its hook must see the whole gradient 2x + 1, once.
  Tensor x = tensor({1.0, 2.0}, TensorOptions(kFloat64).requires_grad(true));
  std::vector<std::vector<double>> seen;
  HookHandle handle = register_post_accumulate_grad_hook(
      x, [&](const Tensor& leaf) { seen.push_back(leaf.grad().to_vector<double>()); });
  (x * x + x).sum().backward();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<double>{3.0, 5.0}));
}

TEST(EnginePostAccumulateGradHookTest, RunsInTheOrderBackwardFinishesTheLeaves) {
  // y = w2 · relu(w1 · x): backward reaches w2 before w1, as it reaches a network's last layer
  // before its first; data-parallel training overlaps communication with backward because of it.
  Tensor x = tensor({1.0, 2.0}, TensorOptions(kFloat64));
  Tensor w1 = tensor({0.5, -0.25}, TensorOptions(kFloat64).requires_grad(true));
  Tensor w2 = tensor({2.0, 3.0}, TensorOptions(kFloat64).requires_grad(true));
  std::vector<std::string> order;
  HookHandle h1 =
      register_post_accumulate_grad_hook(w1, [&](const Tensor&) { order.push_back("w1"); });
  HookHandle h2 =
      register_post_accumulate_grad_hook(w2, [&](const Tensor&) { order.push_back("w2"); });
  (w2 * (w1 * x).relu().exp()).sum().backward();
  EXPECT_EQ(order, (std::vector<std::string>{"w2", "w1"}));
}

TEST(EnginePostAccumulateGradHookTest, RunsOncePerBackwardAndStopsWhenRemoved) {
  Tensor w = ones({3}, TensorOptions(kFloat64).requires_grad(true));
  int calls = 0;
  HookHandle handle = register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++calls; });
  (w * 2.0).sum().backward();
  (w * 3.0).sum().backward();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{5, 5, 5}));  // still accumulates
  handle.remove();
  EXPECT_FALSE(handle.active());
  (w * 3.0).sum().backward();
  EXPECT_EQ(calls, 2);
  {
    HookHandle scoped = register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++calls; });
  }  // destroyed: removed
  (w * 3.0).sum().backward();
  EXPECT_EQ(calls, 2);
}

// Hooks registered on another thread meanwhile: the registry's count went to 0 and back while
// it was recounted, and a backward pass that read the 0 ran none of its hooks (a gradient a
// data-parallel run would never all-reduce).
TEST(EnginePostAccumulateGradHookTest, RunsEveryTimeWhileAnotherThreadRegistersHooks) {
  Tensor x = ones({4}, TensorOptions(kFloat64).requires_grad(true));
  int calls = 0;
  HookHandle mine = register_post_accumulate_grad_hook(x, [&](const Tensor&) { ++calls; });
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    while (!stop.load()) {
      Tensor other = ones({1}, TensorOptions(kFloat64).requires_grad(true));
      HookHandle h = register_post_accumulate_grad_hook(other, [](const Tensor&) {});
    }
  });
  const int passes = 20000;
  for (int i = 0; i < passes; ++i) (x * 2.0).sum().backward();
  stop.store(true);
  churn.join();
  EXPECT_EQ(calls, passes);
}

TEST(EnginePostAccumulateGradHookTest, UnreachedLeavesAreNotCalledAndBackwardOnALeafIs) {
  Tensor used = ones({2}, TensorOptions(kFloat64).requires_grad(true));
  Tensor unused = ones({2}, TensorOptions(kFloat64).requires_grad(true));
  int used_calls = 0, unused_calls = 0;
  HookHandle a = register_post_accumulate_grad_hook(used, [&](const Tensor&) { ++used_calls; });
  HookHandle b = register_post_accumulate_grad_hook(unused, [&](const Tensor&) { ++unused_calls; });
  (used * 2.0).sum().backward();
  EXPECT_EQ(used_calls, 1);
  EXPECT_EQ(unused_calls, 0);
  unused.backward(ones({2}, TensorOptions(kFloat64)));  // backward on the leaf itself
  EXPECT_EQ(unused_calls, 1);
}

TEST(EnginePostAccumulateGradHookTest, TheHookMayReplaceTheGradient) {
  Tensor w = ones({2}, TensorOptions(kFloat64).requires_grad(true));
  HookHandle h = register_post_accumulate_grad_hook(w, [](const Tensor& leaf) {
    Tensor handle = leaf;  // a handle to the same tensor
    handle.set_grad(leaf.grad() * 0.5);
  });
  (w * 4.0).sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{2, 2}));
}

TEST(EnginePostAccumulateGradHookTest, RefusesNonLeavesWithAClearError) {
  Tensor w = ones({2}, TensorOptions(kFloat64).requires_grad(true));
  Tensor computed = w * 2.0;
  EXPECT_SG_ERROR(register_post_accumulate_grad_hook(computed, [](const Tensor&) {}),
                  "only a leaf that requires grad");
  Tensor constant = ones({2});
  EXPECT_SG_ERROR(register_post_accumulate_grad_hook(constant, [](const Tensor&) {}),
                  "does not require grad");
}

}  // namespace
}  // namespace sg
