// Chapter 6: embeddings, softmax and cross-entropy: a classifier of token sequences.
//
// An Embedding turns token ids into vectors (a table lookup), a mean over the sequence pools them
// into one vector, and a Linear maps it to one score (logit) per class. softmax turns logits
// into probabilities; cross-entropy is -log(probability of the right class), and its gradient
// with respect to the logits is simply softmax - onehot(target).
//
// Run: ./build/examples/06_classifier [--quick]   Test: ctest --test-dir build -L ch06
#include <fmt/format.h>

#include <cmath>

#include "example_args.h"
#include "nn/nn.h"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  fmt::print("  [{}] {}\n", ok ? "ok" : "FAILED", what);
  failures += ok ? 0 : 1;
}

double max_diff(const sg::Tensor& a, const sg::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

constexpr int64_t kPad = 0, kVocab = 8, kLength = 6, kNeedle = 3;

// Embedding -> mean over the real (non-pad) tokens -> Linear: a "bag of tokens" classifier.
class BagOfTokens : public sg::nn::Module {
 public:
  explicit BagOfTokens(int64_t dim) : Module("BagOfTokens") {
    embed = register_module("embed", std::make_shared<sg::nn::Embedding>(kVocab, dim, kPad));
    fc = register_module("fc", std::make_shared<sg::nn::Linear>(dim, 2));
  }
  sg::Tensor forward(const sg::Tensor& tokens) {                               // [B, L] int64
    sg::Tensor real = (tokens != kPad).unsqueeze(-1).to(sg::kFloat32);         // [B, L, 1]
    sg::Tensor pooled = (embed->forward(tokens) * real).sum(1) / real.sum(1);  // [B, D]
    return fc->forward(pooled);                                                // [B, 2]
  }
  std::shared_ptr<sg::nn::Embedding> embed;
  std::shared_ptr<sg::nn::Linear> fc;
};

// Random sequences of 2..kLength tokens in [1, kVocab), padded with 0; label 1 if one is kNeedle.
std::pair<sg::Tensor, sg::Tensor> make_batch(int64_t n) {
  sg::Tensor tokens = sg::randint(1, kVocab, {n, kLength});
  sg::Tensor lengths = sg::randint(2, kLength + 1, {n, 1});                // [n, 1]
  sg::Tensor padding = sg::arange(kLength).view({1, kLength}) >= lengths;  // [n, L]: t >= len
  tokens = sg::where(padding, sg::zeros({}, sg::kInt64), tokens);
  sg::Tensor labels = (tokens == kNeedle).to(sg::kInt64).amax(1);  // [n]: any token == 3
  return {tokens, labels};
}

double accuracy(BagOfTokens& model, const sg::Tensor& tokens, const sg::Tensor& labels) {
  sg::NoGradGuard no_grad;
  return (model.forward(tokens).argmax(-1) == labels).to(sg::kFloat32).mean().item<double>();
}

// The chapter's sections, a function each (1 and 2, 4 and 5 share values), run in order by
// main().
void softmax_and_cross_entropy() {
  fmt::print("== 1. softmax by hand: logits [2, 1, 0]\n");
  sg::Tensor logits = sg::tensor({2.0, 1.0, 0.0});
  sg::Tensor p = logits.softmax(0);
  fmt::print("  softmax = {}\n", p);  // e^2 = 7.389, e = 2.718, e^0 = 1: their sum is 11.107
  fmt::print("  by hand: 7.389 / 11.107 = 0.6652, 2.718 / 11.107 = 0.2447, 1 / 11.107 = 0.0900\n");
  check(std::abs(p.at<float>({0}) - 0.6652f) < 1e-4 && std::abs(p.at<float>({2}) - 0.0900f) < 1e-4,
        "the printed probabilities match the hand computation");
  check(max_diff((logits + 1000).softmax(0), p) < 1e-6,
        "softmax(x + 1000) = softmax(x): the max is subtracted first, so exp never overflows");

  fmt::print("\n== 2. cross_entropy = -log p[target], ignore_index, label_smoothing\n");
  const sg::Tensor row = logits.view({1, 3}), target = sg::tensor({0}, sg::kInt64);
  const double ce = sg::nn::cross_entropy(row, target).item<double>();
  const double ce_by_hand = std::log(std::exp(2.0) + std::exp(1.0) + 1.0) - 2.0;
  fmt::print("  target 0: loss {:.4f}   by hand -log(e^2 / 11.107) = log(11.107) - 2 = {:.4f}\n",
             ce, ce_by_hand);
  check(std::abs(ce - ce_by_hand) < 1e-6, "minus the log-probability of the target");
  // Smoothing 0.1: the target distribution is 0.9 onehot + 0.1 / 3 on every class (C = 3).
  const std::vector<float> lp = p.log().to_vector<float>();
  const double smooth_by_hand = -(0.9 * lp[0] + 0.1 / 3 * (lp[0] + lp[1] + lp[2]));
  const double smooth = sg::nn::cross_entropy(row, target, -100, 0.1).item<double>();
  fmt::print(
      "  label_smoothing 0.1: {:.4f}   by hand -(0.9 lp0 + 0.1/3 (lp0 + lp1 + lp2)) = {:.4f}\n",
      smooth, smooth_by_hand);
  check(std::abs(smooth - smooth_by_hand) < 1e-5, "label smoothing, checked by hand");
  const sg::Tensor two_rows = sg::tensor({{2.0, 1.0, 0.0}, {0.0, 5.0, 0.0}});
  const double ignored =
      sg::nn::cross_entropy(two_rows, sg::tensor({0, -1}, sg::kInt64), -1).item<double>();
  fmt::print("  targets [0, -1], ignore_index -1: {:.4f}  (the mean over 1 row)\n", ignored);
  check(std::abs(ignored - ce) < 1e-6, "the ignored row adds nothing and is not counted");
}

void op_against_composition() {
  fmt::print("\n== 3. cross_entropy in float32 agrees with the composition in float64\n");
  // On the fast CPU kernels, float32 rows take the one-node kernel (softmax - q written by hand);
  // the composition of ops, in float64, is the definition it is held to.
  auto loss_and_grad = [](bool composed, const sg::Tensor& x, const sg::Tensor& t) {
    sg::Tensor leaf = x.detach().requires_grad_();
    sg::Tensor loss = composed ? sg::nn::cross_entropy_composed(leaf, t, 0, 0.1)
                               : sg::nn::cross_entropy(leaf, t, 0, 0.1);
    loss.backward();
    return std::pair{loss.item<double>(), leaf.grad().to(sg::kFloat64)};
  };
  sg::Tensor x = sg::randn({4, 5, 7}, sg::kFloat64), t = sg::randint(0, 7, {4, 5});  // 0: ignored
  auto [op_loss, op_grad] = loss_and_grad(false, x.to(sg::kFloat32), t);
  auto [composed_loss, composed_grad] = loss_and_grad(true, x, t);
  fmt::print("  float32 op {:.7f}  float64 composition {:.7f}  max |grad diff| {:.1e}\n", op_loss,
             composed_loss, max_diff(op_grad, composed_grad));
  check(std::abs(op_loss - composed_loss) < 1e-6, "same loss, to float32's precision");
  check(max_diff(op_grad, composed_grad) < 1e-6, "same gradient: softmax - target dist.");
}

void train_a_classifier(bool quick) {
  fmt::print("\n== 4. A classifier: does the sequence contain token 3?\n");
  BagOfTokens model(16);
  fmt::print("{}\n", model);
  auto [test_tokens, test_labels] = make_batch(512);
  fmt::print("  four examples (0 = padding):\n{}\n  labels: {}\n", test_tokens.narrow(0, 0, 4),
             test_labels.narrow(0, 0, 4));
  const double before = accuracy(model, test_tokens, test_labels);

  fmt::print("\n== 5. Training with Adam and label smoothing 0.1\n");
  sg::optim::Adam opt(model.parameters(), {.lr = 0.01});
  const int steps = quick ? 150 : 600;
  for (int step = 1; step <= steps; ++step) {
    auto [tokens, labels] = make_batch(128);
    opt.zero_grad();
    sg::Tensor loss = sg::nn::cross_entropy(model.forward(tokens), labels, -100, 0.1);
    loss.backward();
    opt.step();
    if (step == 1 || step == 10 || step == 20 || step % (steps / 3) == 0)
      fmt::print("  step {:>4}: loss {:.4f}  test accuracy {:.3f}\n", step, loss.item<double>(),
                 accuracy(model, test_tokens, test_labels));
  }
  // Smoothed targets are (0.95, 0.05), never one-hot: the loss cannot go below their entropy.
  const double after = accuracy(model, test_tokens, test_labels);
  fmt::print(
      "  (lowest possible loss: -(0.95 ln 0.95 + 0.05 ln 0.05) = 0.1985)\n"
      "  accuracy: {:.3f} before training, {:.3f} after\n",
      before, after);
  check(after > 0.95 && after > before, "the classifier learned the rule (> 95% on unseen data)");
  check(model.embed->weight.select(0, kPad).abs().max().item<double>() == 0.0,
        "the padding row of the embedding is still zero: it never receives gradient");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = example::parse_args(argc, argv).quick;
  sg::manual_seed(0);  // the same random numbers (data and weights) on every run

  softmax_and_cross_entropy();
  op_against_composition();
  train_a_classifier(quick);

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
