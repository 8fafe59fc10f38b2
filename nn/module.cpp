#include "nn/module.h"

#include <unordered_set>

namespace sg::nn {

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

RemovableHandle& RemovableHandle::operator=(RemovableHandle&& other) noexcept {
  if (this != &other) {
    remove();
    list_ = std::move(other.list_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void RemovableHandle::remove() {
  if (auto list = list_.lock()) {
    std::erase_if(list->hooks, [&](const auto& entry) { return entry.first == id_; });
  }
  list_.reset();
  id_ = 0;
}

RemovableHandle Module::register_forward_hook(ForwardHook hook) {
  SG_CHECK(static_cast<bool>(hook), "{}: register_forward_hook: the hook is empty", type_name_);
  if (!forward_hooks_) forward_hooks_ = std::make_shared<ForwardHookList>();
  const uint64_t id = forward_hooks_->next_id++;
  forward_hooks_->hooks.emplace_back(id, std::move(hook));
  return RemovableHandle(forward_hooks_, id);
}

void Module::run_forward_hooks(const Tensor& output) {
  // A copy: a hook may register or remove hooks of this module while the list is walked.
  const std::vector<std::pair<uint64_t, ForwardHook>> hooks = forward_hooks_->hooks;
  for (const auto& [id, hook] : hooks) hook(*this, output);
}

void Module::check_new_name(const std::string& name) const {
  SG_CHECK(!name.empty() && name.find('.') == std::string::npos,
           "{}: invalid name '{}' (names must be non-empty and contain no '.')", type_name_, name);
  auto taken = [&](const auto& list) {
    for (const auto& [n, _] : list) {
      if (n == name) return true;
    }
    return false;
  };
  SG_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_),
           "{}: the name '{}' is already registered", type_name_, name);
}

Tensor Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_new_name(name);
  SG_CHECK(value.defined(), "{}: parameter '{}' is an undefined tensor", type_name_, name);
  // A parameter is its own leaf: detach it from whatever computed its initial value.
  Tensor p = value.is_leaf() ? value : value.detach();
  p.requires_grad_(requires_grad);
  parameters_.emplace_back(name, p);
  return p;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name);
  SG_CHECK(value.defined(), "{}: buffer '{}' is an undefined tensor", type_name_, name);
  Tensor b = value.detach();
  buffers_.emplace_back(name, b);
  return b;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name);
  SG_CHECK(module != nullptr, "{}: submodule '{}' is null", type_name_, name);
  // A module inside itself would make every walk of the tree (parameters, train, to) endless.
  for (const auto& [path, inner] : module->named_modules()) {
    SG_CHECK(inner.get() != this,
             "{}: submodule '{}' contains this module{}: a module cannot hold itself", type_name_,
             name, path.empty() ? "" : fmt::format(" (as '{}.{}')", name, path));
  }
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool recurse, bool want_params, bool want_buffers,
                     NamedTensors& out) const {
  if (want_params) {
    for (const auto& [name, t] : parameters_) out.emplace_back(prefix + name, t);
  }
  if (want_buffers) {
    for (const auto& [name, t] : buffers_) out.emplace_back(prefix + name, t);
  }
  if (!recurse) return;
  for (const auto& [name, child] : children_) {
    child->collect(prefix + name + ".", true, want_params, want_buffers, out);
  }
}

namespace {

// Each tensor once, under its first name: a tensor registered twice (tied weights) or held by a
// submodule registered under two names is one parameter, for the optimizer and the counts alike
// (PyTorch's remove_duplicate). state_dict keeps every name.
NamedTensors first_names(NamedTensors all) {
  std::unordered_set<const TensorImpl*> seen;
  std::erase_if(all, [&](const auto& entry) { return !seen.insert(entry.second.impl()).second; });
  return all;
}

}  // namespace

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  collect("", recurse, true, false, out);
  return first_names(std::move(out));
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  collect("", recurse, false, true, out);
  return first_names(std::move(out));
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  collect("", true, true, true, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [_, c] : children_) out.push_back(c);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  // The root is not owned by a shared_ptr necessarily; report it with an aliasing no-op pointer.
  out.emplace_back("",
                   std::shared_ptr<Module>(std::shared_ptr<Module>(), const_cast<Module*>(this)));
  std::vector<std::pair<std::string, const Module*>> stack{{"", this}};
  std::unordered_set<const Module*> seen{this};  // a module held twice is listed once
  for (size_t i = 0; i < stack.size(); ++i) {
    auto [prefix, m] = stack[i];
    for (const auto& [name, child] : m->children_) {
      if (!seen.insert(child.get()).second) continue;
      std::string full = prefix.empty() ? name : prefix + "." + name;
      out.emplace_back(full, child);
      stack.emplace_back(full, child.get());
    }
  }
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (Tensor& p : parameters()) p.set_grad(Tensor());
}

template <typename F>
void Module::for_each_tensor(F&& f) {
  for (auto& [_, t] : parameters_) f(t);
  for (auto& [_, t] : buffers_) f(t);
  for (auto& [_, child] : children_) child->for_each_tensor(f);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  for_each_tensor([&](Tensor& t) { t.set_data(t.to(device)); });
}

void Module::to(DType dtype) {
  SG_CHECK(is_floating(dtype), "{}.to: modules hold float parameters; got {}", type_name_, dtype);
  SG_CHECK(dtype != kBFloat16,
           "{}.to: modules compute in float32 or float64, not bfloat16; for bfloat16 products keep "
           "the module in float32 and run it under sg::AutocastGuard(sg::kBFloat16) (the "
           "parameters stay float32, the master weights), or convert single tensors with "
           ".to(sg::kBFloat16) to store them",
           type_name_);
  NoGradGuard no_grad;
  for_each_tensor([&](Tensor& t) {
    if (is_floating(t.dtype())) t.set_data(t.to(dtype));
  });
}

void Module::print_into(std::string& out, int indent) const {
  out += type_name_ + "(";
  std::string extra = extra_repr();
  if (children_.empty()) {
    out += extra + ")";
    return;
  }
  std::string pad(static_cast<size_t>(indent + 2), ' ');
  if (!extra.empty()) out += "\n" + pad + extra;
  for (const auto& [name, child] : children_) {
    out += "\n" + pad + "(" + name + "): ";
    child->print_into(out, indent + 2);
  }
  // Appended piece by piece: "\n" + std::string(indent, ' ') made GCC 12 at -O3 warn of a
  // memcpy of 2^63 bytes (-Wstringop-overflow, a false positive of its string inlining).
  out += '\n';
  out.append(static_cast<size_t>(indent), ' ');
  out += ')';
}

std::string Module::str() const {
  std::string out;
  print_into(out, 0);
  return out;
}

}  // namespace sg::nn
