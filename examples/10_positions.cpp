// Chapter 10: positional encodings.
//
// Attention compares every query with every key and never looks at where they are: shuffle the
// input and the output is shuffled the same way. To make order visible, each position t gets a
// vector p_t added to its embedding. The paper's p_t is a fixed table of sines and cosines,
//   pe[t, 2i] = sin(t / 10000^(2i/D)),   pe[t, 2i+1] = cos(t / 10000^(2i/D)),
// BERT and GPT learn the table instead. Either way it is indexed by POSITION, not by token id.
//
// Run: ./build/examples/10_positions [--out DIR]   (writes DIR/10_positions_sinusoidal.svg)
// Test: ctest --test-dir build -L ch10
#include <fmt/format.h>

#include <cmath>
#include <fstream>

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

// A [rows, cols] table of values in [-1, 1] as SVG: red = +1, white = 0, blue = -1.
std::string heatmap_svg(const std::string& title, const sg::Tensor& table, int cell) {
  const int64_t rows = table.size(0), cols = table.size(1);
  const std::vector<double> v = table.to(sg::kFloat64).to_vector<double>();
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\">\n<text x=\"4\" y=\"16\" font-size=\"13\">{}</text>\n",
      cols * cell + 8, rows * cell + 28, title);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const double x = v[static_cast<size_t>(r * cols + c)];
      const int fade = static_cast<int>(std::lround(255 * (1 - std::abs(x))));
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"rgb({},{},{})\"/>\n",
          4 + c * cell, 24 + r * cell, cell, cell, x > 0 ? 255 : fade, fade, x > 0 ? fade : 255);
    }
  }
  return svg + "</svg>\n";
}

// Sections 3 to 5, functions of their own that main() calls after 1 and 2.
void rotations(const sg::nn::SinusoidalPositionalEncoding& pos) {
  fmt::print("\n== 3. pe[t + k] is a rotation of pe[t], the same for every t\n");
  // sin(a + b) = sin a cos b + cos a sin b and cos(a + b) = cos a cos b - sin a sin b, so each
  // (sin, cos) pair at t + k is the pair at t times a 2x2 rotation by k w_i: one matrix M_k for all
  // t.
  const int64_t k = 3;
  sg::Tensor M = sg::zeros({8, 8});
  for (int64_t i = 0; i < 4; ++i) {
    const double angle = static_cast<double>(k) / std::pow(10.0, static_cast<double>(i));
    M.narrow(0, 2 * i, 2)
        .narrow(1, 2 * i, 2)
        .copy_(
            sg::tensor({{std::cos(angle), -std::sin(angle)}, {std::sin(angle), std::cos(angle)}}));
  }
  sg::Tensor rotated = pos.pe.narrow(0, 0, 60).matmul(M);  // row t times M
  fmt::print("  max |pe[t + 3] - pe[t] M_3| over t = 0..59: {:.1e}\n",
             max_diff(rotated, pos.pe.narrow(0, k, 60)));
  check(max_diff(rotated, pos.pe.narrow(0, k, 60)) < 1e-5, "PE(t + k) = PE(t) M_k for every t");
  // Hence a dot product depends on the distance only: pe[t] . pe[t + k] = sum_i cos(k w_i).
  for (int64_t t : {0, 10, 40})
    fmt::print("  pe[{}] . pe[{}] = {:.5f}\n", t, t + k,
               (pos.pe.select(0, t) * pos.pe.select(0, t + k)).sum().item<double>());
  const double expected = std::cos(3.0) + std::cos(0.3) + std::cos(0.03) + std::cos(0.003);
  check(std::abs((pos.pe.select(0, 40) * pos.pe.select(0, 43)).sum().item<double>() - expected) <
            1e-5,
        "= cos(3) + cos(0.3) + cos(0.03) + cos(0.003), whatever t");
}

void learned_positions(sg::nn::SinusoidalPositionalEncoding& pos) {
  fmt::print("\n== 4. Learned positions, and using either kind\n");
  sg::nn::LearnedPositionalEncoding learned(/*d_model=*/8, /*max_len=*/64);
  for (const auto& [name, p] : learned.named_parameters())
    fmt::print("  learned: parameter {} {}\n", name, p.shape());
  sg::Tensor same_token = sg::zeros({1, 4, 8});  // one token repeated: only positions differ
  sg::Tensor rows = learned(same_token).select(0, 0);
  check(max_diff(rows.select(0, 0), rows.select(0, 1)) > 0.1,
        "the same token at positions 0 and 1 gets different vectors (looked up by position)");
  check(max_diff(pos(same_token, 7).select(0, 0), pos.pe.narrow(0, 7, 4)) == 0.0,
        "forward(x, start = 7) adds rows 7..10: decoding one step at a time");
  try {
    pos(sg::zeros({1, 10, 8}), 60);
    check(false, "positions past max_len should throw");
  } catch (const sg::Error& e) {
    fmt::print("  pos(x of length 10, start 60) throws: {}\n", e.what());
  }
}

void draw_the_table(const std::string& out_dir) {
  fmt::print("\n== 5. The table as a picture (positions down, dims across)\n");
  sg::nn::SinusoidalPositionalEncoding wide(/*d_model=*/64, /*max_len=*/100);
  const std::string path = out_dir + "/10_positions_sinusoidal.svg";
  example::write_text(path, heatmap_svg("sinusoidal PE: 100 positions x 64 dims", wide.pe, 6));
  fmt::print("  wrote {}: fast stripes on the left (high frequencies), slow on the right\n", path);
  check(std::ifstream(path).good(), "the heatmap file exists");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string out_dir = example::parse_args(argc, argv).out_dir;
  sg::manual_seed(0);
  sg::NoGradGuard no_grad;

  fmt::print("== 1. Attention alone cannot see order\n");
  sg::nn::MultiheadAttention mha(/*d_model=*/8, /*heads=*/2);
  sg::Tensor x = sg::randn({1, 5, 8});
  sg::Tensor reverse = sg::tensor({4, 3, 2, 1, 0}, sg::kInt64);
  auto attend = [&](const sg::Tensor& h) { return mha(h, h, h).output; };
  sg::Tensor shuffled_then_attended = attend(x.index_select(1, reverse));
  check(max_diff(shuffled_then_attended, attend(x).index_select(1, reverse)) < 1e-6,
        "reversing the input just reverses the output: order carries no information");
  sg::nn::SinusoidalPositionalEncoding pos(/*d_model=*/8, /*max_len=*/64);
  check(max_diff(attend(pos(x.index_select(1, reverse))), attend(pos(x)).index_select(1, reverse)) >
            0.01,
        "with positions added, the reversed sequence is a different input");

  fmt::print("\n== 2. The sinusoidal table, D = 8: frequencies 1, 1/10, 1/100, 1/1000\n");
  // 10000^(2i/8) = 10^i for the column pair i, so pe[t, 2i] = sin(t / 10^i): easy to check.
  fmt::print("pe[0:4] =\n{}\n", pos.pe.narrow(0, 0, 4));
  fmt::print("  by hand: pe[1, 0] = sin(1) = {:.4f}, pe[1, 1] = cos(1) = {:.4f}\n", std::sin(1.0),
             std::cos(1.0));
  fmt::print("           pe[2, 2] = sin(2 / 10) = {:.4f}, pe[3, 5] = cos(3 / 100) = {:.4f}\n",
             std::sin(0.2), std::cos(0.03));
  check(std::abs(pos.pe.at<float>({1, 0}) - std::sin(1.0)) < 1e-6 &&
            std::abs(pos.pe.at<float>({2, 2}) - std::sin(0.2)) < 1e-6 &&
            std::abs(pos.pe.at<float>({3, 5}) - std::cos(0.03)) < 1e-6,
        "the table matches the formula");
  check(pos.named_parameters().empty() && pos.named_buffers()[0].first == "pe",
        "the table is a buffer: saved with the model, never trained");

  rotations(pos);
  learned_positions(pos);
  draw_the_table(out_dir);

  fmt::print("\n{}\n", failures == 0 ? "All checks passed." : "Some checks FAILED.");
  return failures == 0 ? 0 : 1;
}
