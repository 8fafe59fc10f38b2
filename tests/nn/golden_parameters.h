// Loads PyTorch's weights into one of our modules: golden cases export every weight under OUR
// parameter name (and list the names, in our registration order, in params["parameters"]).
//   load_golden_parameters(layer, sg::testing::golden("nn_transformer", "encoder_layer_post"));
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn/module.h"
#include "tests/support/golden.h"
#include "tests/support/testing.h"

namespace sg::testing {

inline void load_golden_parameters(nn::Module& module, const GoldenCase& c) {
  NoGradGuard no_grad;
  for (auto& [name, p] : module.named_parameters()) {
    Tensor value = c.input(name);
    ASSERT_EQ(value.shape(), p.shape()) << name;
    p.copy_(value);
  }
}

// Every parameter's gradient against PyTorch's, exported as "grad.<our name>".
inline void expect_parameter_gradients_match(const nn::Module& module, const GoldenCase& c,
                                             double atol, double rtol) {
  for (const auto& [name, p] : module.named_parameters()) {
    SCOPED_TRACE(name);
    if (!p.grad().defined()) {
      ADD_FAILURE() << name << " has no gradient";
      continue;
    }
    EXPECT_TRUE(tensors_near(p.grad(), c.output("grad." + name), atol, rtol));
  }
}

// Our parameter names, in order, as a list to compare with a golden case's "parameters".
inline std::vector<std::string> parameter_names(const nn::Module& module) {
  std::vector<std::string> names;
  for (const auto& [name, p] : module.named_parameters()) names.push_back(name);
  return names;
}

}  // namespace sg::testing
