// Chapter 5: modules, a multi-layer perceptron, and the training loop.
//
// A Module registers its parameters and submodules by name; everything else (named_parameters,
// printing, zero_grad, train/eval) walks those registrations. Sequential chains modules, so an
// MLP is Linear -> ReLU -> Linear -> ReLU -> Linear. Training repeats four lines: zero_grad,
// forward + loss, backward, optimizer step, optionally with gradient clipping and an LR schedule.
//
// Run: ./build/examples/05_mlp [--quick]        Test: ctest --test-dir build -L ch05
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "example_args.h"
#include "nn/nn.h"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  fmt::print("  [{}] {}\n", ok ? "ok" : "FAILED", what);
  failures += ok ? 0 : 1;
}

// 1 -> hidden -> hidden -> 1, ReLU between. Every call with the same seed gives the same weights.
std::shared_ptr<sg::nn::Sequential> make_mlp(int64_t hidden) {
  sg::manual_seed(0);
  auto mlp = std::make_shared<sg::nn::Sequential>();
  mlp->push_back(std::make_shared<sg::nn::Linear>(1, hidden));
  mlp->push_back(std::make_shared<sg::nn::ReLU>());
  mlp->push_back(std::make_shared<sg::nn::Linear>(hidden, hidden));
  mlp->push_back(std::make_shared<sg::nn::ReLU>());
  mlp->push_back(std::make_shared<sg::nn::Linear>(hidden, 1));
  return mlp;
}

// Full-batch training; returns the loss of every step.
std::vector<double> train(sg::nn::Sequential& model, sg::optim::Optimizer& opt,
                          sg::optim::LRScheduler* schedule, int steps, const sg::Tensor& x,
                          const sg::Tensor& y) {
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();                                  // 1. forget the last step's gradients
    sg::Tensor loss = sg::nn::mse_loss(model(x), y);  // 2. forward and loss
    loss.backward();                                  // 3. gradients of every parameter
    sg::optim::clip_grad_norm_(opt.params(), 1.0);    //    (bound the step on a loss spike)
    opt.step();                                       // 4. update
    if (schedule) schedule->step();                   //    the lr for the next step
    losses.push_back(loss.item<double>());
  }
  return losses;
}

void report(const char* name, const std::vector<double>& losses) {
  fmt::print("  {:<12}", name);
  for (size_t step : {size_t{0}, size_t{10}, size_t{50}, losses.size() - 1})
    fmt::print("  step {}: {:.2e}", step, losses[step]);
  fmt::print("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = example::parse_args(argc, argv).quick;
  const int steps = quick ? 200 : 1000;

  fmt::print("== 1. A Sequential MLP, its module tree and its named parameters\n");
  auto model = make_mlp(32);
  fmt::print("{}\n", *model);
  for (const auto& [name, p] : model->named_parameters())
    fmt::print("  {:<10} {}\n", name, fmt::format("{}", p.shape()));
  // 1*32 + 32  +  32*32 + 32  +  32*1 + 1 weights and biases (ReLU has none).
  fmt::print("  num_parameters() = {}\n", model->num_parameters());
  check(model->num_parameters() == 64 + 1056 + 33, "1153 parameters, counted by hand");
  check(model->named_parameters()[2].first == "2.weight", "names are the Sequential indices");

  fmt::print("\n== 2. The data: fit y = sin(x) on [-pi, pi]\n");
  sg::Tensor x = sg::arange(-1, 1, 2.0 / 128, sg::kFloat32).view({128, 1}) * std::numbers::pi;
  std::vector<float> sines;  // (there is no sin op: the targets are made on the host)
  for (float v : x.to_vector<float>()) sines.push_back(std::sin(v));
  sg::Tensor y = sg::from_vector(sines, {128, 1});
  sg::Tensor prediction = (*model)(x);
  fmt::print("  x {} -> model(x) {}   (a Linear acts on the last dim)\n", x.shape(),
             prediction.shape());
  check(prediction.shape() == sg::Shape({128, 1}), "one output per point");

  fmt::print("\n== 3. SGD with momentum: v = 0.9 v + g;  p -= lr v\n");
  sg::optim::SGD sgd(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  std::vector<double> sgd_losses = train(*model, sgd, nullptr, steps, x, y);
  report("SGD(0.9)", sgd_losses);
  check(sgd_losses.back() < 0.01 * sgd_losses.front(), "SGD: the loss fell more than 100x");

  fmt::print("\n== 4. Adam, from the SAME initial weights, with warmup + cosine decay\n");
  auto model2 = make_mlp(32);  // seed 0 again: identical to the model of section 1
  sg::optim::Adam adam(model2->parameters(), {.lr = 1e-2});
  sg::optim::WarmupCosineLR schedule(adam, /*warmup=*/steps / 10, /*total=*/steps);
  std::vector<double> adam_losses = train(*model2, adam, &schedule, steps, x, y);
  report("Adam+cosine", adam_losses);
  check(adam_losses.front() == sgd_losses.front(), "same seed, same weights, same first loss");
  check(adam_losses.back() < 0.01 * adam_losses.front(), "Adam: the loss fell more than 100x");

  fmt::print("\n== 5. The LR schedule: a linear warmup, then half a cosine down to 0\n");
  const int64_t warmup = schedule.warmup, total = schedule.total;
  for (int64_t s : {int64_t{0}, warmup / 2, warmup, (warmup + total) / 2, total})
    fmt::print("  lr_at({:>4}) = {:.5f}\n", s, schedule.lr_at(s));
  check(schedule.lr_at(0) == 0.0, "step 0: lr 0 (the warmup starts from nothing)");
  check(std::abs(schedule.lr_at(warmup) - 1e-2) < 1e-12, "end of warmup: the base lr 0.01");
  check(std::abs(schedule.lr_at(warmup + (total - warmup) / 2) - 0.5e-2) < 1e-4,
        "half way through the decay: (1 + cos(pi/2)) / 2 = half the base lr");
  check(adam.lr() == schedule.lr_at(total), "after training the optimizer holds lr_at(total)");

  fmt::print("\n== 6. clip_grad_norm_: one global norm over every gradient\n");
  auto model3 = make_mlp(32);
  model3->zero_grad();
  sg::nn::mse_loss((*model3)(x), y * 100).backward();  // a loss spike: targets 100x too large
  auto global_norm = [&] {
    double sum = 0;
    for (const sg::Tensor& p : model3->parameters())
      sum += (p.grad() * p.grad()).sum().item<double>();
    return std::sqrt(sum);
  };
  const double by_hand = global_norm();
  const double returned = sg::optim::clip_grad_norm_(model3->parameters(), 1.0).item<double>();
  const double after = global_norm();
  fmt::print("  norm before: {:.3f} (by hand {:.3f}),  after clipping to 1.0: {:.6f}\n", returned,
             by_hand, after);
  check(std::abs(returned - by_hand) < 1e-3 * by_hand, "it returns the norm BEFORE clipping");
  check(std::abs(after - 1.0) < 1e-4, "every gradient was scaled by 1 / norm: the norm is now 1");

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
