#include <string>
#include <vector>

#include "nn/feed_forward.h"
#include "tests/nn/golden_parameters.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::golden;
using sg::testing::load_golden_parameters;
using sg::testing::parameter_names;
using sg::testing::random_leaf;
using sg::testing::tensors_equal;
using sg::testing::tensors_near;

TEST(FeedForwardTest, MatchesPyTorchGolden) {
  for (const char* name : {"ffn_relu", "ffn_gelu"}) {
    SCOPED_TRACE(name);
    const auto& c = golden("nn_transformer", name);
    FeedForward ffn(c.param<int64_t>("d_model"), c.param<int64_t>("d_ff"), 0.0,
                    c.param<std::string>("activation"));
    load_golden_parameters(ffn, c);
    EXPECT_TRUE(tensors_near(ffn(c.input("x")), c.output("out"), 1e-6, 1e-5));
  }
}

TEST(FeedForwardTest, ParameterNames) {
  FeedForward ffn(4, 16);
  EXPECT_EQ(parameter_names(ffn), (std::vector<std::string>{"linear1.weight", "linear1.bias",
                                                            "linear2.weight", "linear2.bias"}));
  EXPECT_EQ(ffn.linear1->weight.shape(), (Shape{16, 4}));
  EXPECT_EQ(ffn.linear2->weight.shape(), (Shape{4, 16}));
  EXPECT_NE(ffn.str().find("(activation): ReLU()"), std::string::npos) << ffn.str();
}

TEST(FeedForwardTest, GradcheckRelu) {
  FeedForward ffn(3, 5);
  ffn.to(kFloat64);
  std::vector<Tensor> inputs{random_leaf({2, 4, 3}, 1)};
  for (const Tensor& p : ffn.parameters()) inputs.push_back(p);
  EXPECT_GRADCHECK([&](const auto& in) { return ffn(in[0]); }, inputs);
}

TEST(FeedForwardTest, GradcheckGelu) {
  FeedForward ffn(3, 5, 0.0, "gelu");
  ffn.to(kFloat64);
  std::vector<Tensor> inputs{random_leaf({2, 4, 3}, 2)};
  for (const Tensor& p : ffn.parameters()) inputs.push_back(p);
  EXPECT_GRADCHECK([&](const auto& in) { return ffn(in[0].transpose(0, 1)); }, inputs);
}

TEST(FeedForwardTest, EachPositionOnItsOwn) {
  FeedForward ffn(4, 8);
  Tensor x = randn({1, 3, 4});
  Tensor y = ffn(x);
  Tensor x2 = x.clone();
  {
    NoGradGuard no_grad;
    x2.select(1, 2).fill_(5.0);  // change position 2 only
  }
  Tensor y2 = ffn(x2);
  EXPECT_TRUE(tensors_equal(y2.narrow(1, 0, 2), y.narrow(1, 0, 2)));
  EXPECT_FALSE(tensors_near(y2.select(1, 2), y.select(1, 2), 1e-4));
}

TEST(FeedForwardTest, DropoutInactiveInEval) {
  FeedForward ffn(4, 32, /*dropout=*/0.5);
  Tensor x = randn({2, 3, 4});
  ffn.eval();
  Tensor expected = ffn.linear2->forward(relu(ffn.linear1->forward(x)));
  EXPECT_TRUE(tensors_equal(ffn(x), expected));
  ffn.train();
  EXPECT_FALSE(tensors_near(ffn(x), expected, 1e-4));
}

TEST(FeedForwardTest, Errors) {
  EXPECT_SG_ERROR(FeedForward(4, 8, 0.0, "tanh"),
                  "FeedForward: activation must be \"relu\" or \"gelu\", got \"tanh\"");
  FeedForward ffn(4, 8);
  EXPECT_SG_ERROR(ffn(randn({2, 5})), "Linear: expected input with last dim 4");
}

}  // namespace
}  // namespace sg::nn
