// Training steps of a Transformer under autocast (autograd/autocast.h): close to the float32 step
// (the loss, every gradient, the parameters after Adam), with float32 parameters, gradients and
// Adam moments; the same bits at 1, 2 and 3 threads; and float64 models untouched by it.
#include <cmath>
#include <string>
#include <vector>

#include "autograd/backend/cpu_fast/parallel.h"
#include "nn/loss.h"
#include "nn/optim/adam.h"
#include "nn/transformer.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

TransformerOptions small_model(int64_t d_model = 64, int64_t d_ff = 128) {
  TransformerOptions o;
  o.src_vocab = o.tgt_vocab = 40;
  o.d_model = d_model;
  o.heads = 4;
  o.num_encoder_layers = o.num_decoder_layers = 2;
  o.d_ff = d_ff;
  o.max_len = 32;
  o.dropout = 0.0;
  return o;
}

struct Step {
  float loss;
  std::vector<std::string> names;
  std::vector<Tensor> grads, params;  // after backward; after Adam's step
};

// One training step from a fixed model and batch, its forward and loss under autocast or not.
Step train_step(bool autocast, DType dtype = kFloat32,
                const TransformerOptions& options = small_model()) {
  manual_seed(21);
  Transformer model(options);
  model.to(dtype);
  optim::Adam adam(model.parameters(), {.lr = 1e-3});
  const Tensor src = randint(1, options.src_vocab, {8, 12});
  const Tensor tgt = randint(1, options.tgt_vocab, {8, 13});
  Tensor loss;
  {
    AutocastGuard guard(kBFloat16, autocast);
    AutocastCpuMinProductGuard every_product(0);  // this small model's products are all below it
    loss = cross_entropy(model(src, tgt.slice(1, 0, 12)), tgt.slice(1, 1, 13), options.pad_idx);
  }
  adam.zero_grad();
  loss.backward();
  Step step{loss.item<float>(), {}, {}, {}};
  for (const auto& [name, p] : model.named_parameters()) {
    step.names.push_back(name);
    step.grads.push_back(p.grad().clone());
  }
  adam.step();
  for (const Tensor& p : model.parameters()) step.params.push_back(p.detach().clone());
  return step;
}

// ||a - b|| / ||b||, in float64.
double relative_error(const Tensor& a, const Tensor& b) {
  const Tensor a64 = a.to(kFloat64), b64 = b.to(kFloat64);
  const double norm = std::sqrt((b64 * b64).sum().item<double>());
  const Tensor d = a64 - b64;
  return std::sqrt((d * d).sum().item<double>()) / std::max(norm, 1e-30);
}

// Rounding each product's operands to bfloat16 (a relative error of at most 2^-9 each) moves the
// loss by a fraction of a percent and each gradient, through about thirty rounded products of
// the backward, by 2-5% (as measured here, the norm of the difference over the norm): the bounds
// are about twice that. The exact semantics of each product are AutocastTest's.
void expect_close_to_the_float32_step() {
  const Step reference = train_step(false), mixed = train_step(true);
  EXPECT_NEAR(mixed.loss, reference.loss, 0.01 * std::abs(reference.loss));
  EXPECT_NE(mixed.loss, reference.loss);  // the products did change
  double worst = 0.0;
  for (size_t i = 0; i < reference.grads.size(); ++i) {
    SCOPED_TRACE(reference.names[i]);
    EXPECT_EQ(mixed.grads[i].dtype(), kFloat32);
    EXPECT_EQ(mixed.params[i].dtype(), kFloat32);
    // A key projection's bias has a zero gradient in exact arithmetic (softmax ignores a shift of
    // a whole row of scores): both steps give rounding noise there, nothing to compare.
    if (reference.names[i].ends_with("w_k.bias")) continue;
    worst = std::max(worst, relative_error(mixed.grads[i], reference.grads[i]));
    EXPECT_LT(relative_error(mixed.grads[i], reference.grads[i]), 0.1);
    // Adam's first step moves each parameter by about lr whatever the gradient's size: the
    // parameters differ where the gradients' signs do, by at most 2 lr.
    EXPECT_TRUE(testing::tensors_near(mixed.params[i], reference.params[i], 2.1e-3, 0.0));
  }
  ::testing::Test::RecordProperty("worst_gradient_relative_error", std::to_string(worst));
}

TEST(AutocastTraining, StepStaysCloseToTheFloat32StepOnTheFastKernels) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  testing::at_every_cpu_feature_level(expect_close_to_the_float32_step);
}

TEST(AutocastTraining, StepStaysCloseToTheFloat32StepOnTheReferenceKernels) {
  CpuKernelsGuard reference(CpuKernels::Reference);
  expect_close_to_the_float32_step();
}

TEST(AutocastTraining, AdamStateStaysFloat32) {
  manual_seed(3);
  Linear layer(16, 8);
  optim::Adam adam(layer.parameters(), {.lr = 1e-2});
  const Tensor x = randn({5, 16});
  {
    AutocastGuard autocast(kBFloat16);
    layer(x).sum().backward();
  }
  adam.step();
  int64_t moments = 0;
  for (const auto& [name, t] : adam.state()) {
    if (name.find("exp_avg") == std::string::npos) continue;  // the moments, not the step counts
    EXPECT_EQ(t.dtype(), kFloat32) << name;
    ++moments;
  }
  EXPECT_EQ(moments, 4);  // exp_avg and exp_avg_sq of the weight and the bias
  EXPECT_EQ(layer.weight.grad().dtype(), kFloat32);
}

TEST(AutocastTraining, Float64ModelsAreUntouched) {
  const Step plain = train_step(false, kFloat64), inside = train_step(true, kFloat64);
  EXPECT_EQ(plain.loss, inside.loss);
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    EXPECT_TRUE(testing::tensors_near(inside.grads[i], plain.grads[i], 0, 0)) << i;
  }
}

// The same bits with 1, 2 and 3 threads: the bfloat16 products cut over the pool in blocks fixed
// by the shape, like the float32 ones (Note [Blocks fixed by the shape] in parallel.h). Layers of
// 128 and 512 make products large enough to be cut ([96, 128]·[128, 512] and its gradients).
TEST(AutocastTraining, SameBitsAtOneTwoAndThreeThreads) {
  const int saved = cpu::num_threads();
  testing::at_every_cpu_feature_level([&] {
    std::vector<Step> steps;
    for (const int threads : {1, 2, 3}) {
      cpu::set_num_threads(threads);
      steps.push_back(train_step(true, kFloat32, small_model(128, 512)));
    }
    cpu::set_num_threads(saved);
    for (size_t t = 1; t < steps.size(); ++t) {
      EXPECT_EQ(steps[t].loss, steps[0].loss);
      for (size_t i = 0; i < steps[0].params.size(); ++i) {
        EXPECT_TRUE(testing::tensors_near(steps[t].params[i], steps[0].params[i], 0, 0))
            << "parameter " << i << " at " << t + 1 << " threads";
      }
    }
  });
}

}  // namespace
}  // namespace sg::nn
