// Chapter 9: the Transformer block: feed-forward, residual connections, LayerNorm, dropout.
//
// An encoder layer is two sublayers, self-attention and a position-wise feed-forward network,
// each wrapped in a residual connection (x + sublayer(x)) and a LayerNorm. Where the norm goes
// is the difference between the paper's post-LN and the pre-LN of GPT-2 and later:
//   post-LN:  x = norm(x + sublayer(x))        pre-LN:  x = x + sublayer(norm(x))
// Dropout is active in train() mode only; eval() makes the layer deterministic.
//
// Run: ./build/examples/09_block          Test: ctest --test-dir build -L ch09
#include <fmt/format.h>

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

// Largest distance of any position's mean from 0 and of its (biased) variance from 1.
std::pair<double, double> worst_mean_var(const sg::Tensor& y) {
  sg::Tensor mean = y.mean(-1, true);
  sg::Tensor var = ((y - mean) * (y - mean)).mean(-1);
  return {mean.abs().max().item<double>(), (var - 1).abs().max().item<double>()};
}

// Sections 1 and 4, functions of their own that main() calls in order with 2 and 3.
void feed_forward(const sg::Tensor& x) {
  fmt::print("== 1. FeedForward: the same 2-layer MLP applied to every position\n");
  sg::nn::FeedForward ffn(/*d_model=*/8, /*d_ff=*/32);
  fmt::print("{}\n", ffn);
  sg::Tensor f = ffn(x);
  fmt::print("  x {} -> ffn(x) {}  (8 -> 32 -> ReLU -> 8 at each of the 2 x 5 positions)\n",
             x.shape(), f.shape());
  check(max_diff(f.narrow(1, 2, 1), ffn(x.narrow(1, 2, 1))) < 1e-6,
        "position 2 alone gives the same output: positions never mix in the FFN");
}

void dropout_on_and_off(const sg::nn::TransformerOptions& o, const sg::Tensor& x) {
  fmt::print("\n== 4. Dropout: on in train(), off in eval()\n");
  sg::nn::Dropout dropout(0.25);
  sg::Tensor ones = sg::ones({10000});
  sg::Tensor dropped = dropout(ones);
  const double zero_fraction = (dropped == 0).to(sg::kFloat32).mean().item<double>();
  fmt::print(
      "  train: {:.3f} of the elements zeroed, survivors = {:.4f} = 1 / (1 - 0.25), mean {:.3f}\n",
      zero_fraction, dropped.max().item<double>(), dropped.mean().item<double>());
  check(std::abs(zero_fraction - 0.25) < 0.02, "about p = 25% are zeroed");
  check(std::abs(dropped.mean().item<double>() - 1.0) < 0.05, "the expected value is unchanged");
  sg::manual_seed(1);
  sg::nn::EncoderLayer layer(o);  // dropout 0.1 in attention, FFN and both residual branches
  sg::Tensor a = layer(x), b = layer(x);
  fmt::print("  layer in train mode, same input twice: max difference {:.3f}\n", max_diff(a, b));
  check(max_diff(a, b) > 1e-3, "train mode: two forwards differ (fresh dropout masks)");
  layer.eval();
  a = layer(x);
  b = layer(x);
  fmt::print("  layer in eval mode,  same input twice: max difference {:.1e}\n", max_diff(a, b));
  check(max_diff(a, b) == 0.0, "eval mode: the same input gives the same output");
  check(!layer.ffn->dropout->is_training(), "eval() reached every submodule (recursive)");
}

}  // namespace

int main(int argc, char** argv) {
  example::parse_args(argc, argv);  // no options of its own: refuses typos
  sg::manual_seed(0);
  sg::NoGradGuard no_grad;                      // this chapter only looks at forward passes
  sg::Tensor x = sg::randn({2, 5, 8}) * 3 + 1;  // [B, T, D], deliberately not normalised

  feed_forward(x);

  fmt::print("\n== 2. LayerNorm: each position normalised over its own D features\n");
  sg::nn::LayerNorm norm({8});
  sg::Tensor y = norm(x);
  auto [x_mean, x_var] = worst_mean_var(x);
  auto [y_mean, y_var] = worst_mean_var(y);
  fmt::print("  x:       worst |mean| {:.3f}, worst |var - 1| {:.3f}\n", x_mean, x_var);
  fmt::print("  norm(x): worst |mean| {:.1e}, worst |var - 1| {:.1e}\n", y_mean, y_var);
  fmt::print("  position 0 of norm(x): {}\n", y.select(0, 0).select(0, 0));
  check(y_mean < 1e-5 && y_var < 1e-3, "every position: mean 0, variance 1 (up to eps = 1e-5)");

  fmt::print("\n== 3. Post-LN (the paper) and pre-LN (GPT-2 on), with the same weights\n");
  sg::nn::TransformerOptions o;
  o.d_model = 8;
  o.heads = 2;
  o.d_ff = 32;
  o.dropout = 0.1;
  sg::nn::EncoderLayer post(o);
  o.norm_first = true;
  sg::nn::EncoderLayer pre(o);
  fmt::print("{}\n", pre);
  auto pre_params = pre.named_parameters(), post_params = post.named_parameters();
  bool same_names = pre_params.size() == post_params.size();
  for (size_t i = 0; same_names && i < pre_params.size(); ++i) {  // copy post's weights into pre
    same_names = pre_params[i].first == post_params[i].first;
    pre_params[i].second.copy_(post_params[i].second);
  }
  check(same_names, "both orders have the same parameters: only the wiring differs");
  post.eval();
  pre.eval();
  auto [post_mean, post_var] = worst_mean_var(post(x));
  auto [pre_mean, pre_var] = worst_mean_var(pre(x));
  fmt::print("  post-LN output: worst |mean| {:.1e}, |var - 1| {:.1e}  (it ends in a LayerNorm)\n",
             post_mean, post_var);
  fmt::print("  pre-LN output:  worst |mean| {:.2f}, |var - 1| {:.2f}  (the raw residual stream)\n",
             pre_mean, pre_var);
  check(post_mean < 1e-5 && post_var < 1e-3, "post-LN: every output position is normalised");
  check(pre_var > 0.5, "pre-LN: the output is not (the Encoder adds one final LayerNorm)");
  // Silence both sublayers (zero their output projections): what is left is the skeleton.
  for (sg::nn::EncoderLayer* layer : {&post, &pre}) {
    for (sg::nn::Linear* out : {layer->self_attn->w_o.get(), layer->ffn->linear2.get()}) {
      out->weight.zero_();
      out->bias.zero_();
    }
  }
  fmt::print("  with both sublayers silenced: pre(x) - x = {:.1e},  post(x) - norm(x) = {:.1e}\n",
             max_diff(pre(x), x), max_diff(post(x), norm(x)));
  check(max_diff(pre(x), x) == 0.0, "pre-LN: x flows through untouched (a clean residual path)");
  check(max_diff(post(x), norm(x)) < 1e-4, "post-LN: every layer re-normalises the stream");

  dropout_on_and_off(o, x);

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
