// Containers: Sequential chains UnaryModules; ModuleList holds modules to index (the layers of an
// encoder). Both register their elements as "0", "1", ... so names read encoder.layers.0.norm1.
//   auto mlp = std::make_shared<sg::nn::Sequential>();
//   mlp->push_back(std::make_shared<sg::nn::Linear>(4, 8));
//   mlp->push_back(std::make_shared<sg::nn::ReLU>());
#pragma once

#include "nn/module.h"

namespace sg::nn {

class Sequential : public UnaryModule {
 public:
  Sequential() : UnaryModule("Sequential") {}
  void push_back(std::shared_ptr<UnaryModule> module);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return layers_.size(); }
  std::shared_ptr<UnaryModule> operator[](size_t i) const;

 private:
  std::vector<std::shared_ptr<UnaryModule>> layers_;
};

class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  // The i-th module as type M; throws if it is not an M.
  template <typename M = Module>
  std::shared_ptr<M> at(size_t i) const {
    check_index(i);
    auto m = std::dynamic_pointer_cast<M>(modules_[i]);
    SG_CHECK(m != nullptr, "ModuleList: element {} is a {}, not the type asked for", i,
             modules_[i]->type_name());
    return m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  void check_index(size_t i) const;
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace sg::nn
