// Forward hooks: a function that runs right after a module's forward() has computed its output
// (PyTorch's Module.register_forward_hook), to record or inspect activations without editing the
// model. nn/activation_capture.h records every module's output this way.
//
//   sg::nn::RemovableHandle h = model.encoder->register_forward_hook(
//       [](sg::nn::Module& m, const sg::Tensor& output) {
//         fmt::print("{} -> {}\n", m.type_name(), output.shape());
//       });
//   model(src, tgt);   // prints "Encoder -> [B, S, D]"
//   h.remove();        // or let h go out of scope
//
// PyTorch runs hooks in Module.__call__, which wraps every forward. Our modules' forwards have
// different signatures and are called directly, so each forward() ends with
// `return call_forward_hooks(output)` instead (nn/module.h). A hook sees the output only (the
// inputs have no common type); MultiheadAttention passes its output, not its attention weights.
// Hooks run in registration order, after every forward() call, so a module called twice (the
// Transformer's shared positional encoding) runs them twice.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "autograd/autograd.h"

namespace sg::nn {

class Module;

using ForwardHook = std::function<void(Module& module, const Tensor& output)>;

// A module's hooks, shared with the handles that can remove them.
struct ForwardHookList {
  std::vector<std::pair<uint64_t, ForwardHook>> hooks;
  uint64_t next_id = 1;
};

// Owns one registered forward hook and removes it on remove() or when destroyed, so a hook never
// outlives what it captured. Move-only. It may outlive the module: then remove() does nothing.
class RemovableHandle {
 public:
  RemovableHandle() = default;
  RemovableHandle(std::weak_ptr<ForwardHookList> list, uint64_t id)
      : list_(std::move(list)), id_(id) {}
  RemovableHandle(RemovableHandle&& other) noexcept
      : list_(std::move(other.list_)), id_(std::exchange(other.id_, 0)) {}
  RemovableHandle& operator=(RemovableHandle&& other) noexcept;
  RemovableHandle(const RemovableHandle&) = delete;
  RemovableHandle& operator=(const RemovableHandle&) = delete;
  ~RemovableHandle() { remove(); }

  void remove();  // unregisters the hook; does nothing if already removed
  bool active() const { return id_ != 0 && !list_.expired(); }

 private:
  std::weak_ptr<ForwardHookList> list_;
  uint64_t id_ = 0;
};

}  // namespace sg::nn
