#include "nn/container.h"

namespace sg::nn {

void Sequential::push_back(std::shared_ptr<UnaryModule> module) {
  layers_.push_back(register_module(std::to_string(layers_.size()), std::move(module)));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (auto& layer : layers_) y = layer->forward(y);
  return call_forward_hooks(y);
}

std::shared_ptr<UnaryModule> Sequential::operator[](size_t i) const {
  SG_CHECK(i < layers_.size(), "Sequential: index {} is out of range for {} layers", i,
           layers_.size());
  return layers_[i];
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  modules_.push_back(register_module(std::to_string(modules_.size()), std::move(module)));
}

void ModuleList::check_index(size_t i) const {
  SG_CHECK(i < modules_.size(), "ModuleList: index {} is out of range for {} modules", i,
           modules_.size());
}

}  // namespace sg::nn
