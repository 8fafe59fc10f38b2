// Post-accumulate-grad hooks: a function that runs when backward has finished accumulating a
// leaf's gradient (PyTorch's Tensor.register_post_accumulate_grad_hook).
//
//   HookHandle h = register_post_accumulate_grad_hook(weight, [](const Tensor& w) {
//     start_sending(w.grad());  // weight's gradient from this backward is complete here
//   });
//
// Data-parallel training (distributed/data_parallel.h) starts each gradient's all-reduce from
// such a hook, while backward goes on computing the gradients of earlier layers.
//
// When it runs: once per backward call, right after the engine has added the last of that call's
// gradient contributions into leaf.grad() (a leaf used k times in the graph gets k contributions,
// and its hook runs after the k-th). A leaf that the backward does not reach is not called. The
// hook receives the leaf itself; it may read or replace leaf.grad(). Hooks run on the thread that
// called backward, in the order the engine finishes the leaves, under NoGradGuard.
#pragma once

#include <cstdint>
#include <functional>

#include "autograd/tensor.h"

namespace sg {

using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;

// Owns one registered hook and removes it when destroyed (or on remove()), so a hook never
// outlives what it captured. Move-only.
class HookHandle {
 public:
  HookHandle() = default;
  explicit HookHandle(uint64_t id) : id_(id) {}
  HookHandle(HookHandle&& other) noexcept : id_(other.id_) { other.id_ = 0; }
  HookHandle& operator=(HookHandle&& other) noexcept;
  HookHandle(const HookHandle&) = delete;
  HookHandle& operator=(const HookHandle&) = delete;
  ~HookHandle() { remove(); }

  void remove();  // unregisters the hook; does nothing if already removed
  bool active() const { return id_ != 0; }

 private:
  uint64_t id_ = 0;
};

// Registers `hook` on `leaf`, which must be a leaf that requires grad (only leaves accumulate).
[[nodiscard]] HookHandle register_post_accumulate_grad_hook(const Tensor& leaf,
                                                            PostAccumulateGradHook hook);

// For the engine (autograd/engine.cpp): whether any hook is registered at all (the engine skips
// the bookkeeping otherwise), whether `leaf` has one, and running them.
bool any_post_accumulate_grad_hooks();
bool has_post_accumulate_grad_hooks(const TensorImpl* leaf);
void run_post_accumulate_grad_hooks(const std::shared_ptr<TensorImpl>& leaf);

}  // namespace sg
