#include "nn/activation_capture.h"

#include <set>
#include <unordered_map>

#include "autograd/grad.h"

namespace sg::nn {

ActivationCapture::ActivationCapture(Module& model) : model_(&model) {
  std::set<const Module*> hooked;
  for (const auto& [name, module] : model.named_modules()) {
    // Not the model itself; a module registered under two names is recorded under the first.
    if (name.empty() || !hooked.insert(module.get()).second) continue;
    handles_.push_back(
        module->register_forward_hook([this, base = name](Module& m, const Tensor& output) {
          const int calls = calls_[&m]++;
          std::string recorded = calls == 0 ? base : fmt::format("{}#{}", base, calls + 1);
          records_.push_back({std::move(recorded), base, &m, output, calls == 0, Tensor()});
        }));
  }
}

void ActivationCapture::backward(const Tensor& loss) {
  SG_CHECK(loss.defined() && loss.numel() == 1,
           "ActivationCapture::backward: expected a scalar loss, got {}",
           loss.defined() ? fmt::format("shape {}", loss.shape()) : "an undefined tensor");
  SG_CHECK(loss.requires_grad(),
           "ActivationCapture::backward: the loss does not require grad (computed under "
           "NoGradGuard, or from a model without trainable parameters?)");
  // One input per distinct tensor: a module may return its input unchanged (Dropout in eval or
  // with p = 0), so two records can hold the same tensor.
  std::vector<Tensor> inputs;
  std::unordered_map<const TensorImpl*, size_t> index;
  for (const Record& r : records_) {
    if (r.output.requires_grad() && index.emplace(r.output.impl(), inputs.size()).second) {
      inputs.push_back(r.output);
    }
  }
  std::vector<Tensor> grads;
  if (!inputs.empty()) {
    grads = autograd::grad({loss}, inputs, {}, /*retain_graph=*/true, /*create_graph=*/false,
                           /*allow_unused=*/true);
  }
  for (Record& r : records_) {
    auto it = index.find(r.output.impl());
    r.grad = it == index.end() ? Tensor() : grads[it->second];
  }
  loss.backward();
  loss_ = loss.detach();
}

NamedTensors ActivationCapture::entries() const {
  NamedTensors out;
  for (const Record& r : records_) out.emplace_back(r.name, r.output.detach());
  if (!loss_.defined()) return out;
  out.emplace_back("loss", loss_.reshape({}));
  std::set<const TensorImpl*> done;
  auto add_parameter_grads = [&](const std::string& prefix, const Module& m) {
    for (const auto& [name, p] : m.named_parameters(/*recurse=*/false)) {
      if (!p.grad().defined() || !done.insert(p.impl()).second) continue;
      out.emplace_back("grad." + (prefix.empty() ? name : prefix + "." + name), p.grad());
    }
  };
  for (auto r = records_.rbegin(); r != records_.rend(); ++r) {
    if (r->grad.defined()) out.emplace_back("grad_output." + r->name, r->grad);
    if (r->first_call) add_parameter_grads(r->base_name, *r->module);
  }
  // Parameters of modules that never ran, and the model's own.
  for (const auto& [name, module] : model_->named_modules()) add_parameter_grads(name, *module);
  return out;
}

void ActivationCapture::save(const std::string& path, Metadata metadata) const {
  NamedTensors tensors = entries();
  std::string order;
  for (const auto& [name, t] : tensors) order += (order.empty() ? "" : ",") + name;
  metadata["order"] = order;
  save_safetensors(path, tensors, metadata);
}

void ActivationCapture::clear() {
  records_.clear();
  calls_.clear();
  loss_ = Tensor();
}

void ActivationCapture::remove() { handles_.clear(); }

}  // namespace sg::nn
