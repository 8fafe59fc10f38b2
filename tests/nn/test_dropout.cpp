// Tests for nn/dropout.cpp: the identity in eval mode, inverted dropout in training (the expected
// value is kept), the gradient through the same mask, train/eval from a parent, and errors.
#include "nn/dropout.h"

#include <cmath>

#include "nn/container.h"
#include "nn/linear.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::tensors_near;

TEST(NnDropout, IdentityInEvalMode) {
  Dropout drop(0.5);
  drop.eval();
  Tensor x = randn({100});
  EXPECT_TRUE(tensors_near(drop(x), x, 0, 0));
  drop.train();
  EXPECT_FALSE(tensors_near(drop(x), x, 0, 0));
}

TEST(NnDropout, TrainingZeroesAFractionPAndScalesTheRestToKeepTheMean) {
  manual_seed(0);
  const double p = 0.3;
  Dropout drop(p);
  Tensor x = full({200000}, 2.0);
  std::vector<float> y = drop(x).to_vector<float>();
  int64_t zeros_seen = 0;
  double sum = 0;
  for (float v : y) {
    if (v == 0.0f) {
      ++zeros_seen;
    } else {
      EXPECT_NEAR(v, 2.0 / (1.0 - p), 1e-6);  // survivors scaled by 1 / (1 - p)
    }
    sum += v;
  }
  const double n = static_cast<double>(y.size());
  EXPECT_NEAR(static_cast<double>(zeros_seen) / n, p, 0.005);
  EXPECT_NEAR(sum / n, 2.0, 0.02);  // E[y] = x: eval mode needs no rescaling
}

TEST(NnDropout, GradientFlowsThroughTheSameMask) {
  manual_seed(1);
  Dropout drop(0.5);
  Tensor x = ones({1000}).requires_grad_();
  Tensor y = drop(x);
  y.sum().backward();
  // dy/dx is the mask / (1 - p): exactly y where x = 1.
  EXPECT_TRUE(tensors_near(x.grad(), y.detach(), 0, 0));
}

TEST(NnDropout, EdgeProbabilitiesAndErrors) {
  Tensor x = randn({50});
  EXPECT_TRUE(tensors_near(Dropout(0.0)(x), x, 0, 0));
  EXPECT_TRUE(tensors_near(Dropout(1.0)(x), zeros({50}), 0, 0));
  EXPECT_SG_ERROR(Dropout(1.5), "Dropout: p must be in [0, 1], got 1.5");
  EXPECT_EQ(Dropout(0.1).str(), "Dropout(p=0.1)");
}

TEST(NnDropout, ParentEvalSwitchesItOff) {
  Sequential net;
  net.push_back(std::make_shared<Linear>(4, 4));
  net.push_back(std::make_shared<Dropout>(0.9));
  net.eval();
  Tensor x = randn({3, 4});
  EXPECT_TRUE(tensors_near(net(x), net[0]->forward(x), 0, 0));
}

// Seed 004_b76f018ad56412eb.txt (the Embeddings module): `self.dropout = nn.Dropout()` with no
// argument, next to a config that has hidden_dropout_prob = 0.1. The default p is 0.5, in torch
// and here, so that line drops half of every embedding during training instead of a tenth.
TEST(SeedPitfall, DropoutWithoutArgumentDropsHalf) {
  manual_seed(2);
  Dropout forgot;
  EXPECT_EQ(forgot.p, 0.5);
  std::vector<float> y = forgot(ones({10000})).to_vector<float>();
  double dropped = 0;
  for (float v : y) dropped += v == 0.0f ? 1.0 : 0.0;
  EXPECT_NEAR(dropped / 10000.0, 0.5, 0.02);  // not the 0.1 the config meant
}

}  // namespace
}  // namespace sg::nn
