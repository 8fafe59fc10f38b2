// Tests for autograd/graphviz.cpp. Suites are named Node* so they run with ch03 (the graph).
#include "autograd/graphviz.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/testing.h"

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

sg::TensorOptions leaf() { return sg::TensorOptions(sg::kFloat64).requires_grad(true); }

TEST(NodeToDotTest, OneVertexPerNodeAndLeafOneArrowPerEdge) {
  sg::Tensor p = sg::tensor({1, 2}, leaf()), q = sg::tensor({3, 4}, leaf());
  sg::Tensor r = ((p * q + p).tanh()).sum();  // sum -> tanh -> add -> {mul, p}; mul -> {p, q}
  std::string dot = sg::to_dot(r, {{"p", p}, {"q", q}});
  EXPECT_EQ(dot.rfind("digraph autograd {", 0), 0u) << dot;
  EXPECT_EQ(count(dot, "shape=box"), 4) << dot;      // sum, tanh, add, mul
  EXPECT_EQ(count(dot, "shape=ellipse"), 2) << dot;  // p once, although it is used twice
  EXPECT_EQ(count(dot, " -> "), 6) << dot;           // p gets two arrows: from add and from mul
  EXPECT_NE(dot.find("label=\"sum\\n[]\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"p\\n[2] float64\""), std::string::npos) << dot;
  EXPECT_EQ(count(dot, "style=bold"), 1) << dot;  // the root
}

TEST(NodeToDotTest, InputsThatNeedNoGradientAreLeftOut) {
  sg::Tensor p = sg::tensor({1, 2}, leaf());
  sg::Tensor constant = sg::tensor({5, 6}, sg::kFloat64);
  std::string dot = sg::to_dot((p * constant).sum());
  EXPECT_EQ(count(dot, "shape=ellipse"), 1) << dot;
  EXPECT_EQ(count(dot, " -> "), 2) << dot;
  EXPECT_NE(dot.find("label=\"leaf\\n[2] float64\""), std::string::npos) << dot;  // unnamed
}

TEST(NodeToDotTest, MarksNodesFreedByBackward) {
  sg::Tensor p = sg::tensor({1, 2}, leaf());
  sg::Tensor loss = (p * p).sum();
  EXPECT_EQ(count(sg::to_dot(loss), "(freed)"), 0);
  loss.backward();
  EXPECT_EQ(count(sg::to_dot(loss), "(freed)"), 2);
}

TEST(NodeToDotTest, LeavesAndTensorsWithoutGraph) {
  sg::Tensor p = sg::tensor({1, 2}, leaf());
  EXPECT_NE(sg::to_dot(p, {{"p", p}}).find("label=\"p\\n[2] float64\""), std::string::npos);
  EXPECT_NE(sg::to_dot(sg::ones({3})).find("no graph"), std::string::npos);
  EXPECT_SG_ERROR(sg::to_dot(sg::Tensor()), "to_dot: called on an undefined tensor");
}

TEST(NodeToDotTest, DeepChainDoesNotOverflowTheStack) {
  sg::Tensor x = sg::tensor({1}, leaf());
  sg::Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  std::string dot = sg::to_dot(y);
  EXPECT_EQ(count(dot, "shape=box"), 100000);
}

}  // namespace
