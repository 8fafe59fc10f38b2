// Module: the base of every layer. A module registers its parameters, buffers and submodules by
// name, and everything else (parameters(), named_parameters(), state_dict(), train()/eval(),
// to(device), zero_grad(), printing) walks those registrations: no hand-written overrides.
//
//   class TwoLayer : public sg::nn::Module {
//    public:
//     TwoLayer() : Module("TwoLayer") {
//       fc1 = register_module("fc1", std::make_shared<sg::nn::Linear>(4, 8));
//       fc2 = register_module("fc2", std::make_shared<sg::nn::Linear>(8, 2));
//     }
//     sg::Tensor forward(const sg::Tensor& x) { return fc2->forward(sg::relu(fc1->forward(x))); }
//     std::shared_ptr<sg::nn::Linear> fc1, fc2;
//   };
//   TwoLayer net;   // net.named_parameters(): fc1.weight [8, 4], fc1.bias [8], fc2.weight,
//   fc2.bias
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/autograd.h"
#include "nn/forward_hook.h"

namespace sg::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string type_name = "Module");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- registration (call from constructors) ----
  // A parameter is a leaf that requires grad (unless requires_grad is false). Returns the tensor
  // handle to keep as a member: it shares its data with the registered entry.
  Tensor register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  // A buffer is state that is saved and moved with the module but not trained (e.g. a positional
  // encoding table).
  Tensor register_buffer(const std::string& name, Tensor value);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // ---- traversal: own entries first, then submodules in registration order (as PyTorch) ----
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;  // "encoder.layers.0.norm1.weight"
  NamedTensors named_buffers(bool recurse = true) const;
  NamedTensors state_dict() const;  // parameters and buffers, by dotted name
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const {
    return children_;
  }
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules()
      const;  // incl. this ("")
  int64_t num_parameters() const;

  // ---- state ----
  virtual void train(bool on = true);  // recursive; Dropout reads is_training()
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();  // sets every parameter's .grad() to undefined (PyTorch's set_to_none)
  // Moves (or converts) every parameter and buffer in place: the handles members hold stay valid.
  void to(Device device);
  void to(DType dtype);

  // ---- hooks (nn/forward_hook.h) ----
  // `hook(module, output)` runs after every forward() of this module, until the handle removes it.
  [[nodiscard]] RemovableHandle register_forward_hook(ForwardHook hook);

  // ---- printing ----
  const std::string& type_name() const { return type_name_; }
  // PyTorch-like tree: "Linear(in_features=4, out_features=8, bias=true)" or a nested listing.
  std::string str() const;

 protected:
  // The text inside the parentheses of this module's own line, e.g. "in_features=4, ...".
  virtual std::string extra_repr() const { return ""; }

  // Every forward() returns through this: it runs the forward hooks, if any, and passes `output`
  // on. Without hooks it is one pointer test.
  Tensor call_forward_hooks(Tensor output) {
    if (forward_hooks_ && !forward_hooks_->hooks.empty()) run_forward_hooks(output);
    return output;
  }

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_new_name(const std::string& name) const;
  template <typename F>
  void for_each_tensor(F&& f);
  void collect(const std::string& prefix, bool recurse, bool want_params, bool want_buffers,
               NamedTensors& out) const;
  void print_into(std::string& out, int indent) const;
  void run_forward_hooks(const Tensor& output);

  std::string type_name_;
  NamedTensors parameters_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
  std::shared_ptr<ForwardHookList> forward_hooks_;  // null until the first registration
};

// A module with one tensor in and one out, so containers such as Sequential can chain it.
class UnaryModule : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
};

}  // namespace sg::nn

// fmt::format("{}", module) for Module and every class derived from it.
template <typename T>
struct fmt::formatter<T, char, std::enable_if_t<std::is_base_of_v<sg::nn::Module, T>>>
    : fmt::formatter<std::string> {
  auto format(const sg::nn::Module& m, fmt::format_context& ctx) const {
    return fmt::formatter<std::string>::format(m.str(), ctx);
  }
};
