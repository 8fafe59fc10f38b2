// Chapter 7: scaled dot-product attention and its masks.
//
// Each query scores every key with a dot product, scaled by 1/√Dh; a softmax over the keys turns
// the scores into weights that sum to 1; the output is the weighted mean of the values:
//   attention(q, k, v) = softmax(q kᵀ / √Dh) v
// A mask (bool, TRUE = MAY ATTEND) removes keys before the softmax: padding keys, and in a
// decoder the future positions.
//
// Run: ./build/examples/07_attention [--out DIR]   (writes two .svg heatmaps into DIR)
// Test: ctest --test-dir build -L ch07
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>

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

// A [rows, cols] matrix of values in [0, 1] as SVG: one square per entry, white 0 to blue 1,
// with its value written inside. Open the file in a browser.
std::string heatmap_svg(const std::string& title, const sg::Tensor& matrix) {
  const int64_t rows = matrix.size(0), cols = matrix.size(1), cell = 36;
  const std::vector<double> v = matrix.to(sg::kFloat64).to_vector<double>();
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\">\n<text x=\"4\" y=\"18\" font-size=\"14\">{}</text>\n",
      std::max<int64_t>(cols * cell + 8, 260), rows * cell + 32, title);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const double x = v[static_cast<size_t>(r * cols + c)];
      const int shade = static_cast<int>(std::lround(255 * (1 - x)));
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"rgb({},{},255)\" "
          "stroke=\"#ccc\"/><text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" "
          "fill=\"{}\">{:.2f}</text>\n",
          4 + c * cell, 28 + r * cell, cell, cell, shade, shade, 4 + c * cell + cell / 2,
          28 + r * cell + cell / 2 + 4, x > 0.5 ? "white" : "black", x);
    }
  }
  return svg + "</svg>\n";
}

// Section 6, a function of its own that main() calls after the others: it draws the masks and
// weights of sections 3 and 4.
void write_heatmaps(const std::string& out_dir, const sg::Tensor& pad_mask,
                    const sg::Tensor& causal, const sg::Tensor& wc) {
  fmt::print("\n== 6. Heatmaps (SVG)\n");
  sg::Tensor both = sg::logical_and(pad_mask, causal);  // [2, 1, 5, 5]: a decoder's target mask
  const std::string mask_path = out_dir + "/07_attention_mask.svg";
  const std::string weights_path = out_dir + "/07_attention_weights.svg";
  example::write_text(
      mask_path, heatmap_svg("padding AND causal, sequence 1", both.select(0, 1).select(0, 0)));
  example::write_text(weights_path,
                      heatmap_svg("causal attention weights", wc.select(0, 0).select(0, 0)));
  std::ifstream written(weights_path);
  std::string first_line;
  std::getline(written, first_line);
  fmt::print("  wrote {} and {}\n", mask_path, weights_path);
  check(first_line.rfind("<svg", 0) == 0, "the weights heatmap is an SVG file");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string out_dir = example::parse_args(argc, argv).out_dir;

  fmt::print("== 1. By hand: one-hot keys, Dh = 4, so scores are q_j / sqrt(4) = q_j / 2\n");
  const double ln3 = std::log(3.0);
  sg::Tensor q = sg::tensor({{2 * ln3, 0, 0, 0}, {0, 0, 0, 0}});  // T = 2 queries
  sg::Tensor k = sg::eye(4);                                      // S = 4 keys: e0, e1, e2, e3
  sg::Tensor v = sg::tensor({{6.0, 0.0}, {0.0, 6.0}, {0.0, 0.0}, {6.0, 6.0}});
  auto [out, w] = sg::nn::scaled_dot_product_attention(q, k, v);
  // Query 0: scores [ln 3, 0, 0, 0] -> exp [3, 1, 1, 1] / 6 -> weights [1/2, 1/6, 1/6, 1/6];
  //   output = 1/2 [6, 0] + 1/6 ([0, 6] + [0, 0] + [6, 6]) = [4, 2].
  // Query 1: all scores 0 -> uniform weights 1/4 -> output = mean of the values = [3, 3].
  fmt::print("weights =\n{}\noutput =\n{}\n", w, out);
  check(max_diff(w.select(0, 0), sg::tensor({0.5, 1 / 6.0, 1 / 6.0, 1 / 6.0})) < 1e-6,
        "query 0: weights [1/2, 1/6, 1/6, 1/6]");
  check(max_diff(out, sg::tensor({{4.0, 2.0}, {3.0, 3.0}})) < 1e-5,
        "outputs [4, 2] and [3, 3], the weighted means of the values");

  fmt::print("\n== 2. Every row of weights sums to 1\n");
  sg::manual_seed(0);
  sg::Tensor qr = sg::randn({2, 2, 5, 8}), kr = sg::randn({2, 2, 5, 8}),
             vr = sg::randn({2, 2, 5, 8});
  sg::Tensor wr = sg::nn::scaled_dot_product_attention(qr, kr, vr).weights;  // [B, H, T, S]
  fmt::print("  weights {}: row sums range from {:.7f} to {:.7f}\n", wr.shape(),
             wr.sum(-1).min().item<double>(), wr.sum(-1).max().item<double>());
  check(max_diff(wr.sum(-1), sg::ones({2, 2, 5})) < 1e-6, "softmax over the keys: rows sum to 1");

  fmt::print("\n== 3. The padding mask [B, 1, 1, S]: no query may look at a pad key\n");
  sg::Tensor tokens = sg::tensor({{5, 7, 9, 2, 0}, {3, 4, 0, 0, 0}}, sg::kInt64);  // 0 = pad
  sg::Tensor pad_mask = sg::nn::make_padding_mask(tokens, /*pad=*/0);
  fmt::print("tokens =\n{}\npadding mask {} =\n{}\n", tokens, pad_mask.shape(), pad_mask);
  sg::Tensor wp = sg::nn::scaled_dot_product_attention(qr, kr, vr, pad_mask).weights;
  fmt::print("weights of sequence 1, head 0 (keys 2..4 are padding) =\n{}\n",
             wp.select(0, 1).select(0, 0));
  check(wp.narrow(0, 1, 1).narrow(3, 2, 3).abs().max().item<double>() == 0.0,
        "sequence 1 puts exactly 0 weight on its three pad keys");
  check(max_diff(wp.sum(-1), sg::ones({2, 2, 5})) < 1e-6, "and its rows still sum to 1");

  fmt::print("\n== 4. The causal mask [1, 1, T, T]: query t sees keys 0..t only\n");
  sg::Tensor causal = sg::nn::make_causal_mask(5);
  fmt::print("causal mask {} =\n{}\n", causal.shape(), causal.select(0, 0).select(0, 0));
  sg::Tensor wc = sg::nn::scaled_dot_product_attention(qr, kr, vr, causal).weights;
  fmt::print("weights of sequence 0, head 0 =\n{}\n", wc.select(0, 0).select(0, 0));
  check(wc.triu(1).abs().max().item<double>() == 0.0, "nothing above the diagonal: no future");
  check(std::abs(wc.at<float>({0, 0, 0, 0}) - 1.0f) < 1e-6, "query 0 can only see key 0: weight 1");

  fmt::print("\n== 5. A fully masked row\n");
  sg::Tensor none_for_row_1 = sg::tensor({{1.0, 1.0, 1.0, 1.0}, {0.0, 0.0, 0.0, 0.0}}) != 0;
  // The naive recipe (masked_fill with -inf, then softmax) divides 0 by 0 on such a row:
  sg::Tensor naive =
      (q.matmul(k.t()) / 2)
          .masked_fill(none_for_row_1.logical_not(), -std::numeric_limits<double>::infinity())
          .softmax(-1);
  fmt::print("naive -inf + softmax, row 1: {}\n", naive.select(0, 1));
  auto [out_m, w_m] = sg::nn::scaled_dot_product_attention(q, k, v, none_for_row_1);
  fmt::print("scaled_dot_product_attention: weights row 1 {}, output row 1 {}\n", w_m.select(0, 1),
             out_m.select(0, 1));
  check(std::isnan(naive.at<float>({1, 0})), "the naive recipe gives NaN, which would spread");
  check(w_m.select(0, 1).abs().max().item<double>() == 0.0 &&
            out_m.select(0, 1).abs().max().item<double>() == 0.0,
        "ours gives all-zero weights and a zero output for the query that may see nothing");

  write_heatmaps(out_dir, pad_mask, causal, wc);

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
