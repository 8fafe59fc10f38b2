// CUDA graphs (autograd/cuda_graph.h): a training step captured once and replayed computes what
// the same eager steps compute (dropout and Adam's schedule included); what a graph cannot hold is
// a clear error; TF32 products only when asked. The GPU tests skip, with the reason, without a
// usable GPU (scripts/gpu_tests.sh runs them on one); the rest run everywhere.
#include <cmath>
#include <map>
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

// What five training steps leave: the losses, the parameters and Adam's state.
struct FiveSteps {
  std::vector<double> losses;
  NamedTensors params, state;
};

constexpr int kSteps = 5;
double lr_at(int step) { return 1e-3 * (1.0 + 0.1 * step); }

// Dropout on, and the lr changed before every step as a schedule does: five eager steps, or one
// eager step then a captured one replayed four times. The replays must compute what the eager
// steps compute: the same dropout masks, the same lr and step count in Adam.
FiveSteps five_steps(bool graphed) {
  manual_seed(0);
  Transformer model(tiny_options(0.1));
  model.to(kGpu);
  optim::Adam optimizer(model.parameters(), {.lr = 1e-3, .betas = {0.9, 0.98}});
  FiveSteps out;
  Tensor input = copy_batch(1);  // the graph's input: refilled before every replay
  Tensor loss;
  cuda::Graph graph(kGpu);
  for (int step = 0; step < kSteps; ++step) {
    if (graphed && step == 1) {
      graph.capture([&] { loss = train_step(model, optimizer, input); });
      EXPECT_EQ(optimizer.step_count(), 1) << "capturing is not a step";
    }
    optimizer.set_lr(lr_at(step));
    manual_seed(100 + step);  // the dropout masks of this step
    if (!graphed || step == 0) {
      out.losses.push_back(train_step(model, optimizer, copy_batch(step)).item<double>());
      continue;
    }
    input.copy_(copy_batch(step));
    graph.replay();
    out.losses.push_back(loss.item<double>());
  }
  EXPECT_EQ(optimizer.step_count(), kSteps);
  for (const auto& [name, t] : model.named_parameters()) out.params.emplace_back(name, t.to(kCPU));
  for (const auto& [name, t] : optimizer.state()) out.state.emplace_back(name, t.to(kCPU));
  return out;
}

double norm_of(const Tensor& t) {
  const Tensor d = t.to(kFloat64);
  return std::sqrt((d * d).sum().item<double>());
}

// In deterministic mode (autograd/deterministic.h) the embedding's backward adds in a fixed order,
// and every other kernel already does: the replays give the eager steps' bits, every loss, weight
// and moment.
TEST_F(CudaGraph, ReplaysGiveTheBitsOfEagerStepsInDeterministicMode) {
  const DeterministicAlgorithmsGuard deterministic(true);
  const FiveSteps eager = five_steps(false), graphed = five_steps(true);
  EXPECT_EQ(graphed.losses, eager.losses);
  ASSERT_EQ(graphed.params.size(), eager.params.size());
  for (size_t i = 0; i < eager.params.size(); ++i) {
    EXPECT_TRUE(testing::tensors_equal(graphed.params[i].second, eager.params[i].second))
        << eager.params[i].first;
  }
  ASSERT_EQ(graphed.state.size(), eager.state.size());
  for (size_t i = 0; i < eager.state.size(); ++i) {
    EXPECT_EQ(graphed.state[i].first, eager.state[i].first);
    EXPECT_TRUE(testing::tensors_equal(graphed.state[i].second, eager.state[i].second))
        << eager.state[i].first;
  }
  const FiveSteps again = five_steps(true);
  EXPECT_EQ(again.losses, graphed.losses) << "a second graphed run";
}

// By default the embedding's backward adds with atomicAdd, in an order that varies between runs,
// eager or graphed, so the steps agree to rounding only. Rounding is not small everywhere: the
// attention's key biases have a gradient of zero in exact arithmetic (softmax ignores a shift of a
// whole row of scores), so theirs is rounding noise (~1e-9 against ~0.1 for the weights), and
// Adam, which divides by the gradient's own size, turns noise into steps of up to lr in any
// direction. So each moment is compared absolutely, against the size of all moments of its kind;
// the parameters whose moment is such noise are held to Adam's bound (at most 2 lr per step
// apart), and every other parameter to 1e-5 of its norm.
TEST_F(CudaGraph, ReplaysGiveTheEagerStepsToRoundingByDefault) {
  ASSERT_FALSE(are_deterministic_algorithms_enabled());
  const FiveSteps eager = five_steps(false), graphed = five_steps(true);
  for (int step = 0; step < kSteps; ++step) {
    EXPECT_NEAR(graphed.losses[step], eager.losses[step], 1e-5 * std::abs(eager.losses[step]))
        << "step " << step;
  }
  std::map<std::string, double> squared_norm_of_kind;  // "exp_avg", "exp_avg_sq"
  std::map<std::string, Tensor> moment;                // "exp_avg.<i>" -> the eager moment
  for (const auto& [name, t] : eager.state) {
    if (optim::Optimizer::is_bookkeeping_entry(name)) continue;
    squared_norm_of_kind[name.substr(0, name.find('.'))] += std::pow(norm_of(t), 2);
    moment[name] = t;
  }
  ASSERT_EQ(graphed.state.size(), eager.state.size());
  for (size_t i = 0; i < eager.state.size(); ++i) {
    const auto& [name, expected] = eager.state[i];
    ASSERT_EQ(graphed.state[i].first, name);
    const Tensor& actual = graphed.state[i].second;
    if (optim::Optimizer::is_bookkeeping_entry(name)) {
      EXPECT_TRUE(testing::tensors_equal(actual, expected)) << name;
      continue;
    }
    const double scale = std::sqrt(squared_norm_of_kind[name.substr(0, name.find('.'))]);
    EXPECT_LE(norm_of(actual - expected), 1e-4 * scale) << name;
  }
  double lr_sum = 0.0;
  for (int step = 0; step < kSteps; ++step) lr_sum += lr_at(step);
  const double all_first_moments = std::sqrt(squared_norm_of_kind["exp_avg"]);
  for (size_t i = 0; i < eager.params.size(); ++i) {
    const auto& [name, expected] = eager.params[i];
    const Tensor difference = (graphed.params[i].second - expected).to(kFloat64);
    const Tensor& first_moment = moment[fmt::format("exp_avg.{}", i)];
    if (norm_of(first_moment) < 1e-5 * all_first_moments) {  // a gradient of rounding noise
      EXPECT_LE(difference.abs().max().item<double>(), 2 * lr_sum) << name << " (noise)";
    } else {
      EXPECT_LE(norm_of(difference), 1e-5 * norm_of(expected)) << name;
    }
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
