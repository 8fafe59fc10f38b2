// Chapter 8: multi-head attention, one shape at a time.
//
// Instead of one attention over d_model features, H heads each attend over their own slice of
// head_dim = d_model / H features, in parallel: project x with w_q, w_k, w_v; split the last dim
// into [H, Dh] and move H in front of T (a view and a permute, no copy); attend in every head at
// once; move the heads back and merge [H, Dh] into d_model (here a copy is unavoidable); w_o.
//
// Run: ./build/examples/08_multihead      Test: ctest --test-dir build -L ch08
#include <fmt/format.h>

#include <cmath>
#include <string>

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

// One line of the walk-through: the code, the resulting shape, what the dims mean, the strides.
void line(const char* code, const sg::Tensor& t, const char* meaning = "") {
  fmt::print("  {:<34} {:<13} {:<14} strides {}{}\n", code, fmt::format("{}", t.shape()), meaning,
             fmt::format("{}", t.strides()), t.is_contiguous() ? "" : " (not contiguous)");
}

}  // namespace

int main(int argc, char** argv) {
  example::parse_args(argc, argv);  // no options of its own: refuses typos
  fmt::print("== 1. MultiheadAttention(d_model = 8, heads = 2): head_dim = 4\n");
  sg::manual_seed(0);
  sg::nn::MultiheadAttention mha(/*d_model=*/8, /*heads=*/2);
  fmt::print("{}\n", mha);
  for (const auto& [name, p] : mha.named_parameters())
    fmt::print("  {:<10} {}\n", name, fmt::format("{}", p.shape()));
  check(mha.head_dim == 4 && mha.num_parameters() == 4 * (8 * 8 + 8), "4 projections of 8x8 + 8");

  fmt::print("\n== 2. Self-attention by hand, B = 2, T = 3: the shape at every line\n");
  const int64_t B = 2, T = 3, D = 8, H = 2, Dh = 4;
  sg::Tensor x = sg::randn({B, T, D});
  line("x", x, "[B, T, D]");
  sg::Tensor q = mha.w_q->forward(x), k = mha.w_k->forward(x), v = mha.w_v->forward(x);
  line("q = w_q(x)", q, "[B, T, D]");
  line("q.view({B, T, H, Dh})", q.view({B, T, H, Dh}), "[B, T, H, Dh]");
  sg::Tensor qh = q.view({B, T, H, Dh}).permute({0, 2, 1, 3});
  line("qh = ... .permute({0, 2, 1, 3})", qh, "[B, H, T, Dh]");
  sg::Tensor kh = k.view({B, T, H, Dh}).permute({0, 2, 1, 3});
  sg::Tensor vh = v.view({B, T, H, Dh}).permute({0, 2, 1, 3});
  line("kh.transpose(-2, -1)", kh.transpose(-2, -1), "[B, H, Dh, T]");
  // The scale is 1/sqrt(Dh) = 1/2: the size of ONE head, not of d_model.
  sg::Tensor scores = qh.matmul(kh.transpose(-2, -1)) / std::sqrt(double(Dh));
  line("scores = qh kh^T / sqrt(Dh)", scores, "[B, H, T, T]");
  sg::Tensor weights = scores.softmax(-1);
  sg::Tensor heads = weights.matmul(vh);
  line("heads = softmax(scores) vh", heads, "[B, H, T, Dh]");
  sg::Tensor back = heads.permute({0, 2, 1, 3});
  line("back = heads.permute({0, 2, 1, 3})", back, "[B, T, H, Dh]");
  try {
    back.view({B, T, D});
    check(false, "view() of the permuted heads should have thrown");
  } catch (const sg::Error& e) {
    fmt::print("  back.view({{B, T, D}}) throws: {}\n", e.what());
  }
  sg::Tensor merged = back.reshape({B, T, D});  // reshape copies where view cannot
  line("back.reshape({B, T, D}): a copy", merged, "[B, T, D]");
  sg::Tensor y = mha.w_o->forward(merged);
  line("y = w_o(merged)", y, "[B, T, D]");
  auto [y_module, w_module] = mha(x, x, x);
  check(max_diff(y, y_module) < 1e-6, "the module computes exactly these lines");
  check(max_diff(weights, w_module) < 1e-6, "and returns the per-head weights [B, H, T, T]");
  check(max_diff(qh.select(1, 1), q.narrow(2, 4, 4)) == 0.0,
        "head 1 reads features 4..7 of q: a slice, no copy");
  // A tempting shortcut: q.view({B, H, T, Dh}) has the right shape but cuts the wrong way:
  // its "head 0" is the first 12 numbers of each sequence, i.e. positions mixed with features.
  check(max_diff(q.view({B, H, T, Dh}), qh) > 0.1,
        "view to [B, H, T, Dh] without the permute: right shape, wrong numbers");

  fmt::print("\n== 3. Cross-attention: T = 3 queries from the decoder, S = 5 keys from memory\n");
  sg::Tensor memory = sg::randn({B, 5, D});
  sg::Tensor src = sg::tensor({{4, 2, 7, 0, 0}, {5, 5, 1, 3, 9}}, sg::kInt64);  // 0 = padding
  sg::Tensor src_mask = sg::nn::make_padding_mask(src, 0);                      // [B, 1, 1, S]
  auto [yc, wc] = mha(x, memory, memory, src_mask);
  line("mha(x, memory, memory).output", yc, "[B, T, D]");
  line("mha(x, memory, memory).weights", wc, "[B, H, T, S]");
  fmt::print("weights of batch 0, head 1 (keys 3, 4 are padding):\n{}\n",
             wc.select(0, 0).select(0, 1).detach());
  check(yc.shape() == sg::Shape({B, T, D}), "the output has the QUERY's length T = 3");
  check(wc.shape() == sg::Shape({B, H, T, 5}), "weights [B, H, T, S] = [2, 2, 3, 5]");
  check(wc.select(0, 0).narrow(2, 3, 2).abs().max().item<double>() == 0.0,
        "no head of batch 0 looks at its padding keys");

  fmt::print("\n== 4. d_model must split evenly into heads\n");
  try {
    sg::nn::MultiheadAttention bad(/*d_model=*/10, /*heads=*/4);
    check(false, "MultiheadAttention(10, 4) should have thrown");
  } catch (const sg::Error& e) {
    fmt::print("  MultiheadAttention(10, 4) throws: {}\n", e.what());
    check(std::string(e.what()).find("d_model 10 is not divisible by heads 4") != std::string::npos,
          "the message names both numbers");
  }

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
