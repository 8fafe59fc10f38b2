// CUDA graphs (autograd/cuda_graph.h): a training step captured once and replayed computes what
// the same eager steps compute (dropout and Adam's schedule included); what a graph cannot hold is
// a clear error; TF32 products only when asked. The GPU tests skip, with the reason, without a
// usable GPU (scripts/gpu_tests.sh runs them on one); the rest run everywhere.
#include <cmath>
#include <string>

#include "autograd/backend/adam_step_scalars.h"
#include "autograd/cpu_kernels.h"
#include "autograd/cuda_graph.h"
#include "nn/nn.h"
#include "nn/optim/adam.h"
#include "nn/optim/sgd.h"
#include "tests/support/testing.h"
#include "tests/support/tiny_copy_task.h"

namespace sg::nn {
namespace {

const Device kGpu = Device::cuda(0);
constexpr int64_t kVocab = testing::kCopyVocab, kPad = testing::kCopyPad;

class CudaGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << cuda_unavailable_reason();
  }
};

TransformerOptions tiny_options(double dropout) { return testing::tiny_copy_task_options(dropout); }

// Copy-task sequences on the GPU: every batch has the same shape.
Tensor copy_batch(uint64_t seed) { return testing::copy_task_sequences(seed).to(kGpu); }

// The copy task's step on `seq` [B, L]: forward, loss, zero_grad, backward, Adam.
Tensor train_step(Transformer& model, optim::Optimizer& optimizer, const Tensor& seq) {
  const int64_t L = seq.size(1);
  Tensor logits = model(seq, seq.narrow(1, 0, L - 1));
  Tensor loss =
      cross_entropy(logits.reshape({-1, kVocab}), seq.narrow(1, 1, L - 1).reshape({-1}), kPad);
  optimizer.zero_grad();
  loss.backward();
  optimizer.step();
  return loss;
}

double relative_error(const Tensor& actual, const Tensor& expected) {
  const Tensor a = actual.to(kCPU).to(kFloat64), e = expected.to(kCPU).to(kFloat64);
  const Tensor d = a - e;
  const double norm = std::sqrt((e * e).sum().item<double>());
  return std::sqrt((d * d).sum().item<double>()) / std::max(norm, 1e-30);
}

TEST_F(CudaGraph, ReplaysRewriteTheStepsOutputsFromNewInputs) {
  Tensor x = zeros({1000}, TensorOptions(kFloat32).device(kGpu));
  Tensor y;
  cuda::Graph graph(kGpu);
  graph.capture([&] { y = x * 2.0 + 1.0; });
  EXPECT_TRUE(graph.captured());
  EXPECT_GE(graph.nodes(), 2);
  for (double v : {1.0, -3.5, 7.25}) {
    x.fill_(v);
    graph.replay();
    EXPECT_EQ(y.to(kCPU).to_vector<float>()[999], static_cast<float>(2 * v + 1));
  }
  EXPECT_EQ(graph.replays(), 3);
}

// Dropout on, and the lr changed before every step as a schedule does: five eager steps, and one
// eager step then a captured one replayed four times. The replays compute what the eager steps
// compute: the same dropout masks, the same lr and step count in Adam, so the same losses, bit for
// bit. The weights and Adam's moments agree to rounding only: the embedding's backward adds rows
// with atomicAdd, whose order varies from run to run on a GPU, eager or graphed (two eager runs
// differ in the same bits); on an H100 the moments differed by ~5e-6 relative after five steps.
TEST_F(CudaGraph, ReplaysGiveTheBitsOfEagerSteps) {
  constexpr int kSteps = 5;
  auto lr_at = [](int step) { return 1e-3 * (1.0 + 0.1 * step); };
  manual_seed(0);
  Transformer eager_model(tiny_options(0.1));
  manual_seed(0);
  Transformer graph_model(tiny_options(0.1));
  eager_model.to(kGpu);
  graph_model.to(kGpu);
  optim::Adam eager_opt(eager_model.parameters(), {.lr = 1e-3, .betas = {0.9, 0.98}});
  optim::Adam graph_opt(graph_model.parameters(), {.lr = 1e-3, .betas = {0.9, 0.98}});

  std::vector<double> eager_losses;
  for (int step = 0; step < kSteps; ++step) {
    eager_opt.set_lr(lr_at(step));
    manual_seed(100 + step);  // the dropout masks of this step
    eager_losses.push_back(train_step(eager_model, eager_opt, copy_batch(step)).item<double>());
  }

  std::vector<double> graph_losses;
  graph_opt.set_lr(lr_at(0));
  manual_seed(100);
  graph_losses.push_back(train_step(graph_model, graph_opt, copy_batch(0)).item<double>());
  Tensor input = copy_batch(1);  // the graph's input: refilled before every replay
  Tensor loss;
  cuda::Graph graph(kGpu);
  graph.capture([&] { loss = train_step(graph_model, graph_opt, input); });
  EXPECT_EQ(graph_opt.step_count(), 1) << "capturing is not a step";
  for (int step = 1; step < kSteps; ++step) {
    input.copy_(copy_batch(step));
    graph_opt.set_lr(lr_at(step));
    manual_seed(100 + step);
    graph.replay();
    graph_losses.push_back(loss.item<double>());
  }
  EXPECT_EQ(graph_losses, eager_losses);
  EXPECT_EQ(graph_opt.step_count(), kSteps);
  const NamedTensors eager_params = eager_model.named_parameters();
  const NamedTensors graph_params = graph_model.named_parameters();
  for (size_t i = 0; i < eager_params.size(); ++i) {
    EXPECT_LT(relative_error(graph_params[i].second, eager_params[i].second), 1e-5)
        << eager_params[i].first;
  }
  const NamedTensors eager_state = eager_opt.state(), graph_state = graph_opt.state();
  ASSERT_EQ(graph_state.size(), eager_state.size());
  for (size_t i = 0; i < eager_state.size(); ++i) {
    EXPECT_EQ(graph_state[i].first, eager_state[i].first);
    // Step counts and lrs exactly; the moments to rounding (see above).
    EXPECT_LT(relative_error(graph_state[i].second, eager_state[i].second), 1e-3)
        << eager_state[i].first;
  }
}

TEST_F(CudaGraph, AReadBackInsideTheStepIsAClearError) {
  Tensor x = ones({4}, TensorOptions(kFloat32).device(kGpu));
  cuda::Graph graph(kGpu);
  EXPECT_SG_ERROR(graph.capture([&] { (void)(x * 2.0).sum().item<double>(); }),
                  "a read back to the host");
  EXPECT_FALSE(graph.captured());
  EXPECT_FALSE(cuda::is_capturing(kGpu));
  EXPECT_EQ((x * 3.0).sum().item<double>(), 12.0);  // the device works eagerly as before
  EXPECT_SG_ERROR(graph.replay(), "nothing captured yet");
}

TEST_F(CudaGraph, OptimizersThatCannotBeReplayedRefuseCapture) {
  manual_seed(0);
  Transformer model(tiny_options(0.0));
  model.to(kGpu);
  const Tensor seq = copy_batch(0);
  {
    optim::Adam fresh(model.parameters(), {.lr = 1e-3});
    cuda::Graph graph(kGpu);
    EXPECT_SG_ERROR(graph.capture([&] { train_step(model, fresh, seq); }),
                    "run one step eagerly before capturing");
  }
  {
    optim::SGD sgd(model.parameters(), {.lr = 1e-3});
    train_step(model, sgd, seq);
    cuda::Graph graph(kGpu);
    EXPECT_SG_ERROR(graph.capture([&] { train_step(model, sgd, seq); }),
                    "SGD: cannot step inside a CUDA graph capture");
  }
  {
    optim::Adam amsgrad(model.parameters(), {.lr = 1e-3, .amsgrad = true});
    train_step(model, amsgrad, seq);
    cuda::Graph graph(kGpu);
    EXPECT_SG_ERROR(graph.capture([&] { train_step(model, amsgrad, seq); }),
                    "amsgrad cannot be captured");
  }
}

// TF32 (PyTorch's allow_tf32): off, a float32 product is exact to float32's rounding; on, the
// tensor cores round the operands to 10 bits of mantissa, about 1e-3 relative.
TEST_F(CudaGraph, Tf32ProductsOnlyWhenAllowed) {
  manual_seed(7);
  const Tensor a = randn({256, 512}), b = randn({512, 128});
  const Tensor exact = matmul(a.to(kFloat64), b.to(kFloat64));
  auto error_of = [&](bool tf32) {
    cuda::set_allow_tf32(tf32);
    const Tensor product = matmul(a.to(kGpu), b.to(kGpu)).to(kCPU).to(kFloat64);
    cuda::set_allow_tf32(false);
    const Tensor diff = product - exact;
    return std::sqrt((diff * diff).sum().item<double>() / (exact * exact).sum().item<double>());
  };
  EXPECT_FALSE(cuda::allow_tf32());
  EXPECT_LT(error_of(false), 1e-6);
  const double tf32_error = error_of(true);
  EXPECT_GT(tf32_error, 1e-5);
  EXPECT_LT(tf32_error, 5e-3);
}

// Everywhere: the CPU has no graphs, and saying so is an error, not a silent eager run.
TEST(CudaGraphAnywhere, CpuTensorsAreNeverCapturedAndAGraphNeedsCuda) {
  EXPECT_FALSE(cuda::is_capturing(kCPU));
  EXPECT_SG_ERROR(cuda::Graph{kCPU}, "CUDA");
  EXPECT_SG_ERROR(cuda::before_each_replay(kCPU, [] {}), "");
}

// Adam's update from a step_scalars tensor (what a graph replays) is the update from host numbers.
TEST(CudaGraphAnywhere, AdamFromStepScalarsIsAdamFromHostNumbers) {
  const CpuKernelsGuard reference(CpuKernels::Reference);
  manual_seed(3);
  const Tensor grad = randn({5, 7});
  for (const bool decoupled : {false, true}) {
    manual_seed(4);
    Tensor p1 = randn({5, 7}), m1 = randn({5, 7}).abs(), v1 = randn({5, 7}).abs();
    Tensor p2 = p1.clone(), m2 = m1.clone(), v2 = v1.clone();
    adam_update_(p1, grad, m1, v1, 0.01, 0.9, 0.98, 1e-8, 0.1, decoupled, 3);
    const AdamStepScalars s = adam_step_scalars(0.01, 0.9, 0.98, 0.1, 3);
    adam_update_(p2, grad, m2, v2,
                 from_vector(std::vector<double>{s.step_size, s.sqrt_bias_correction2, s.decay}),
                 0.9, 0.98, 1e-8, 0.1, decoupled);
    EXPECT_EQ(p2.to_vector<float>(), p1.to_vector<float>());
    EXPECT_EQ(m2.to_vector<float>(), m1.to_vector<float>());
    EXPECT_EQ(v2.to_vector<float>(), v1.to_vector<float>());
  }
  EXPECT_SG_ERROR(adam_update_(randn({2}), randn({2}), zeros({2}), zeros({2}), zeros({2}), 0.9,
                               0.98, 1e-8, 0.0, false),
                  "step_scalars must be a contiguous float64 tensor of shape [3]");
}

}  // namespace
}  // namespace sg::nn
