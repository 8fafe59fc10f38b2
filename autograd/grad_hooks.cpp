#include "autograd/grad_hooks.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "autograd/error.h"

namespace sg {

namespace {

struct RegisteredHook {
  uint64_t id;
  // The leaf is watched, not owned: a hook must not keep its parameter alive. A new tensor that
  // reuses a dead leaf's address is told apart by the expired weak pointer.
  std::weak_ptr<TensorImpl> leaf;
  PostAccumulateGradHook hook;
};

// Leaf -> its hooks, behind one mutex: registering and removing are rare (once per parameter per
// DataParallel), lookups happen once per leaf per backward, and only when any hook exists.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const TensorImpl*, std::vector<RegisteredHook>> hooks;
  uint64_t next_id = 1;
  std::atomic<size_t> count{0};
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: handles may be released at exit
  return *r;
}

}  // namespace

HookHandle& HookHandle::operator=(HookHandle&& other) noexcept {
  if (this != &other) {
    remove();
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
}

void HookHandle::remove() {
  if (id_ == 0) return;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto it = r.hooks.begin(); it != r.hooks.end(); ++it) {
    auto& list = it->second;
    auto found = std::find_if(list.begin(), list.end(),
                              [&](const RegisteredHook& h) { return h.id == id_; });
    if (found == list.end()) continue;
    list.erase(found);
    if (list.empty()) r.hooks.erase(it);
    --r.count;
    break;
  }
  id_ = 0;
}

HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  SG_CHECK(leaf.defined(), "register_post_accumulate_grad_hook: the tensor is undefined");
  SG_CHECK(leaf.is_leaf() && leaf.requires_grad(),
           "register_post_accumulate_grad_hook: only a leaf that requires grad accumulates a "
           "gradient, but this tensor of shape {} {}",
           leaf.shape(), leaf.requires_grad() ? "has a grad_fn" : "does not require grad");
  SG_CHECK(static_cast<bool>(hook), "register_post_accumulate_grad_hook: the hook is empty");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const uint64_t id = r.next_id++;
  auto& list = r.hooks[leaf.impl()];
  // Drop hooks of a dead tensor that lived at this address (their handles are still out).
  list.erase(std::remove_if(list.begin(), list.end(),
                            [&](const RegisteredHook& h) {
                              return h.leaf.expired() || h.leaf.lock() != leaf.impl_ptr();
                            }),
             list.end());
  list.push_back({id, leaf.impl_ptr(), std::move(hook)});
  // Counted aside and stored once: another thread's backward reads the count without the lock,
  // and a count reset to 0 on the way made it skip every hook of its pass.
  size_t count = 0;
  for (const auto& [impl, hooks] : r.hooks) count += hooks.size();
  r.count.store(count);
  return HookHandle(id);
}

bool any_post_accumulate_grad_hooks() { return registry().count.load() > 0; }

bool has_post_accumulate_grad_hooks(const TensorImpl* leaf) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.hooks.find(leaf);
  if (it == r.hooks.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [&](const RegisteredHook& h) {
    auto alive = h.leaf.lock();
    return alive && alive.get() == leaf;
  });
}

void run_post_accumulate_grad_hooks(const std::shared_ptr<TensorImpl>& leaf) {
  std::vector<PostAccumulateGradHook> to_run;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.hooks.find(leaf.get());
    if (it == r.hooks.end()) return;
    for (const RegisteredHook& h : it->second) {
      if (h.leaf.lock() == leaf) to_run.push_back(h.hook);
    }
  }
  // Outside the lock: a hook may register or remove hooks.
  const Tensor tensor(leaf);
  for (const PostAccumulateGradHook& hook : to_run) hook(tensor);
}

}  // namespace sg
