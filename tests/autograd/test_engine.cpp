// The backward engine: accumulation, deep graphs, grad mode, retain_graph, and its errors.
#include <thread>
#include <vector>

#include "tests/support/testing.h"

namespace sg {
namespace {

using testing::random_leaf;
using testing::tensors_near;

TEST(EngineTest, ChainRuleOnAKnownFunction) {
  // y = a x² + b at x = 3, a = 2, b = 1: dy/dx = 2 a x = 12, dy/da = x² = 9, dy/db = 1
  Tensor x = scalar_tensor(3.0, TensorOptions(kFloat64).requires_grad(true));
  Tensor a = scalar_tensor(2.0, TensorOptions(kFloat64).requires_grad(true));
  Tensor b = scalar_tensor(1.0, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = a * x * x + b;
  EXPECT_EQ(y.item<double>(), 19.0);
  y.backward();
  EXPECT_EQ(x.grad().item<double>(), 12.0);
  EXPECT_EQ(a.grad().item<double>(), 9.0);
  EXPECT_EQ(b.grad().item<double>(), 1.0);
}

TEST(EngineTest, DiamondAccumulates) {
  // x feeds two branches that meet again: dy/dx = d(x·e^x + x³)/dx = e^x + x e^x + 3x²
  Tensor x = tensor({0.5, -1.0}, TensorOptions(kFloat64).requires_grad(true));
  Tensor left = x * x.exp();
  Tensor right = x.pow(3.0);
  (left + right).sum().backward();
  std::vector<double> g = x.grad().to_vector<double>();
  for (int i = 0; i < 2; ++i) {
    double v = x.at<double>({i});
    EXPECT_NEAR(g[i], std::exp(v) + v * std::exp(v) + 3 * v * v, 1e-12);
  }
}

TEST(EngineTest, LeafGradsAccumulateAcrossBackwardCalls) {
  Tensor w = ones({3}, TensorOptions(kFloat64).requires_grad(true));
  (w * 2.0).sum().backward();
  (w * 3.0).sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{5, 5, 5}));
  w.set_grad(Tensor());  // zero_grad as PyTorch's set_to_none
  EXPECT_FALSE(w.grad().defined());
}

TEST(EngineTest, LeafGradsNeverAlias) {
  // add's backward hands the same tensor to both inputs; changing one .grad() in place must not
  // change the other.
  Tensor a = ones({2}, TensorOptions(kFloat64).requires_grad(true));
  Tensor b = ones({2}, TensorOptions(kFloat64).requires_grad(true));
  (a + b).backward(ones({2}, kFloat64));
  {
    NoGradGuard no_grad;
    a.grad().mul_(10.0);
  }
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_FALSE(a.grad().shares_storage(b.grad()));
}

TEST(EngineTest, BroadcastGradientsAreSummedBack) {
  Tensor a = random_leaf({3, 1});
  Tensor b = random_leaf({4});
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().shape(), (Shape{3, 1}));
  EXPECT_EQ(b.grad().shape(), (Shape{4}));
  EXPECT_NEAR(a.grad().at<double>({0, 0}), b.sum().item<double>(), 1e-12);
  EXPECT_NEAR(b.grad().at<double>({0}), a.sum().item<double>(), 1e-12);
}

TEST(EngineTest, DeepChainNeitherOverflowsNorLeaks) {
  // 10^5 nodes: the topological sort and the graph's destruction are both iterative.
  Tensor x = scalar_tensor(1.0, TensorOptions(kFloat64).requires_grad(true));
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y.backward();
  EXPECT_EQ(x.grad().item<double>(), 1.0);
  Tensor z = x;
  for (int i = 0; i < 100000; ++i) z = z + 0.0;
  z = Tensor();  // frees 10^5 nodes without recursion
  // A node that holds its child twice (y + y): the child's count was 2 at both edges, so it was
  // left to the edges' own destructor, which recursed; 2 * 10^5 of them overflowed the stack.
  Tensor w = x;
  for (int i = 0; i < 200000; ++i) w = w + w;
  w = Tensor();
  SUCCEED();
}

// Two threads' backward passes through one shared leaf: its .grad was read and replaced with no
// lock, and sums were lost (398 of 12000), or a half-made tensor read (a crash).
TEST(EngineTest, BackwardPassesOnTwoThreadsAccumulateEveryGradient) {
  Tensor x = ones({64}, TensorOptions(kFloat64).requires_grad(true));
  const int passes = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < passes; ++i) (x * 2.0).sum().backward();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(x.grad().at<double>({0}), 3.0 * passes * 2.0);
  EXPECT_EQ(x.grad().at<double>({63}), 3.0 * passes * 2.0);
}

// A leaf frozen between the forward and the backward gets no gradient (PyTorch's
// AccumulateGrad): it got one, and an optimizer updated the frozen parameter.
TEST(EngineTest, ALeafFrozenBeforeTheBackwardGetsNoGradient) {
  Tensor w = random_leaf({3}), v = random_leaf({3});
  Tensor loss = (w * 2.0 + v).sum();
  w.requires_grad_(false);
  loss.backward();
  EXPECT_FALSE(w.grad().defined());
  EXPECT_TRUE(v.grad().defined());
}

TEST(EngineTest, NoGradGuardRecordsNothing) {
  Tensor x = random_leaf({2});
  {
    NoGradGuard no_grad;
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_FALSE(is_grad_enabled());
  }
  EXPECT_TRUE(is_grad_enabled());
  EXPECT_TRUE((x * 2.0).requires_grad());
  Tensor d = (x * 2.0).detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
}

TEST(GradModeTest, GuardsNest) {
  {
    NoGradGuard outer;
    { NoGradGuard inner; }
    EXPECT_FALSE(is_grad_enabled());
  }
  EXPECT_TRUE(is_grad_enabled());
}

TEST(EngineTest, RetainGraphAllowsASecondBackward) {
  Tensor x = random_leaf({3});
  Tensor y = (x * x).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  EXPECT_TRUE(tensors_near(x.grad(), x * 4.0, 1e-12));
  EXPECT_SG_ERROR(y.backward(), "backward: the graph through 'sum");
}

TEST(EngineTest, NonScalarNeedsAGradient) {
  Tensor x = random_leaf({2, 3});
  Tensor y = x * 2.0;
  EXPECT_SG_ERROR(y.backward(),
                  "backward: grad can be implicitly created only for a scalar output, "
                  "but the output has shape [2, 3]");
  EXPECT_SG_ERROR(y.backward(ones({3}, kFloat64)),
                  "backward: gradient has shape [3] but the output has shape [2, 3]");
  EXPECT_SG_ERROR(y.backward(ones({2, 3}, kFloat32)), "backward: gradient is float32");
  y.backward(full({2, 3}, 0.5, kFloat64));
  EXPECT_TRUE(tensors_near(x.grad(), full({2, 3}, 1.0, kFloat64), 1e-12));
  EXPECT_SG_ERROR(zeros({2}).sum().backward(),
                  "backward: the tensor of shape [] does not require grad");
}

TEST(EngineTest, InPlaceChangeOfASavedTensorIsCaught) {
  Tensor x = random_leaf({3});
  Tensor w = ones({3}, kFloat64);  // saved by mul for x's gradient
  Tensor y = (x * w).sum();
  {
    NoGradGuard no_grad;
    w.add_(1.0);
  }
  EXPECT_SG_ERROR(y.backward(),
                  "backward of 'mul': a tensor of shape [3] saved for backward was "
                  "modified by an in-place operation (version 0 at save, 1 now)");
}

TEST(EngineTest, InPlaceOnATensorThatRequiresGradIsRefused) {
  Tensor x = random_leaf({3});
  EXPECT_SG_ERROR(x.add_(1.0), "add_: cannot change a tensor of shape [3] in place");
  // The forms that run under a NoGradGuard of their own were checked inside it, where grad mode
  // is off, and accepted: x.add_(c, 2.0) left the graph with a wrong gradient.
  const Tensor c = ones({3}, kFloat64);
  EXPECT_SG_ERROR(x.add_(c, 2.0), "add_: cannot change a tensor of shape [3] in place");
  EXPECT_SG_ERROR(x.sub_(c), "add_: cannot change a tensor of shape [3] in place");
  EXPECT_SG_ERROR(x.normal_(), "normal_: cannot change a tensor of shape [3] in place");
  EXPECT_SG_ERROR(x.uniform_(), "uniform_: cannot change a tensor of shape [3] in place");
  Tensor a = zeros({3}, kFloat64);
  EXPECT_SG_ERROR(a.sub_(x), "add_: cannot change a tensor of shape [3] in place");
  EXPECT_SG_ERROR((x * 2.0).requires_grad_(false), "requires_grad_: only leaf tensors");
  EXPECT_SG_ERROR(zeros({2}, kInt64).requires_grad_(),
                  "requires_grad_: only floating point tensors (float32, float64, bfloat16)");
}

TEST(EngineTest, ALeafChangedBySetDataAfterTheGraphIsRefused) {
  // Its gradient would be [3] on a [5] tensor (and float32 on a float64 one).
  Tensor p = randn({3}, TensorOptions().requires_grad(true));
  Tensor y = p.exp().sum();
  p.set_data(randn({5}));
  EXPECT_SG_ERROR(y.backward(),
                  "backward: a leaf's gradient is float32 [3], but the leaf is float32 [5] now");
  EXPECT_FALSE(p.grad().defined());
  Tensor q = randn({3}, TensorOptions().requires_grad(true));
  Tensor z = q.exp().sum();
  q.set_data(randn({3}, kFloat64));
  EXPECT_SG_ERROR(z.backward(), "but the leaf is float64 [3] now");
}

TEST(EngineTest, GraphIsFreedWithTheLastTensor) {
  Tensor x = random_leaf({4});
  std::weak_ptr<Node> node;
  {
    Tensor y = (x.exp() * x).sum();
    node = y.grad_fn();
    EXPECT_FALSE(node.expired());
  }
  EXPECT_TRUE(node.expired());  // no cycle kept it alive (the exp node saved its own output)
}

TEST(EngineTest, BackwardOnALeafSeedsItsGrad) {
  Tensor x = random_leaf({});
  x.backward();
  EXPECT_EQ(x.grad().item<double>(), 1.0);
}

TEST(GradcheckTest, ReportsAWrongGradient) {
  // A deliberately wrong op: forward x², backward claims 3x.
  GradcheckFn wrong = [](const std::vector<Tensor>& in) {
    Tensor y;
    {
      NoGradGuard no_grad;
      y = in[0] * in[0];
    }
    return record("wrong_square", y, {in[0]},
                  [x = SavedTensor(in[0])](const Tensor& g) { return Grads{g * x.get() * 3.0}; });
  };
  GradcheckResult r = gradcheck(wrong, {random_leaf({3})});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.report.find("gradcheck: input 0 (shape [3]) element 0: analytic"), std::string::npos)
      << r.report;
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return in[0] * in[0]; }, {random_leaf({3})})
          .ok);
  EXPECT_SG_ERROR(gradcheck([](const std::vector<Tensor>& in) { return in[0]; },
                            {ones({2}, TensorOptions().requires_grad(true))}),
                  "gradcheck: input 0 must be a float64 leaf");
}

}  // namespace
}  // namespace sg
