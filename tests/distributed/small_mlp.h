// A small float64 network and its data for the data-parallel tests: every rank builds the same
// model from a seed and draws the same global batch of a step, and takes its rows of it.
#pragma once

#include "nn/nn.h"
#include "tests/support/testing.h"

namespace sg::testing::small_mlp {

using nn::Linear;
using nn::Module;
using nn::UnaryModule;

constexpr int64_t kBatch = 8, kIn = 5, kHidden = 7, kOut = 3;

class Mlp : public UnaryModule {
 public:
  Mlp() : UnaryModule("Mlp") {
    fc1 = register_module("fc1", std::make_shared<Linear>(kIn, kHidden));
    fc2 = register_module("fc2", std::make_shared<Linear>(kHidden, kOut));
  }
  Tensor forward(const Tensor& x) override { return fc2->forward(fc1->forward(x).tanh()); }
  std::shared_ptr<Linear> fc1, fc2;
};

inline std::shared_ptr<Mlp> make_model(uint64_t seed) {
  manual_seed(seed);
  auto model = std::make_shared<Mlp>();
  model->to(kFloat64);
  return model;
}

// The global batch of step `step`, the same on every rank (each takes its rows).
inline std::pair<Tensor, Tensor> global_batch(int step) {
  Generator gen(1000 + static_cast<uint64_t>(step));
  return {randn({kBatch, kIn}, gen, kFloat64), randn({kBatch, kOut}, gen, kFloat64)};
}

inline std::pair<Tensor, Tensor> shard(const std::pair<Tensor, Tensor>& batch, int rank,
                                       int ranks) {
  const int64_t rows = kBatch / ranks;
  return {batch.first.narrow(0, rank * rows, rows), batch.second.narrow(0, rank * rows, rows)};
}

inline Tensor loss_of(Mlp& model, const std::pair<Tensor, Tensor>& batch) {
  return nn::mse_loss(model.forward(batch.first), batch.second);
}

inline void expect_same_parameters(Module& actual, Module& expected, double rtol) {
  auto a = actual.named_parameters(), e = expected.named_parameters();
  ASSERT_EQ(a.size(), e.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (rtol == 0) {
      EXPECT_TRUE(tensors_equal(a[i].second, e[i].second)) << a[i].first;
    } else {
      EXPECT_TRUE(tensors_near(a[i].second, e[i].second, rtol, rtol)) << a[i].first;
    }
  }
}

}  // namespace sg::testing::small_mlp
