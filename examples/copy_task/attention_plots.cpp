#include "attention_plots.h"

#include "decoding.h"
#include "plots.h"

namespace copy_task {

using sg::examples::Heatmap;
using sg::examples::heatmap_grid;
using sg::examples::write_file_atomically;

namespace {

// weights [1, H, T, S] -> one heatmap per head.
std::vector<Heatmap> heads_of(const sg::Tensor& weights, int64_t layer,
                              const std::vector<std::string>& rows,
                              const std::vector<std::string>& cols) {
  std::vector<Heatmap> maps;
  const int64_t H = weights.size(1), T = weights.size(2), S = weights.size(3);
  std::vector<double> w = weights.to_vector<double>();
  for (int64_t h = 0; h < H; ++h) {
    Heatmap m;
    m.title = fmt::format("layer {} head {}", layer, h);
    m.row_labels = rows;
    m.col_labels = cols;
    for (int64_t t = 0; t < T; ++t) {
      m.values.emplace_back(w.begin() + (h * T + t) * S, w.begin() + (h * T + t + 1) * S);
    }
    maps.push_back(std::move(m));
  }
  return maps;
}

std::vector<std::string> labels(const std::vector<int64_t>& tokens) {
  std::vector<std::string> out;
  for (int64_t t : tokens) out.push_back(t == kPad ? "·" : std::to_string(t));
  return out;
}

}  // namespace

void write_attention_plots(sg::nn::Transformer& model, const sg::Tensor& src, const Config& config,
                           const std::string& out_dir) {
  sg::NoGradGuard no_grad;
  model.eval();
  const int64_t L = src.size(1);
  std::vector<int64_t> decoded = greedy_decode(model, src, L)[0];
  // Teacher forcing on what the model produced: the decoder input is decoded[:-1].
  std::vector<int64_t> decoder_in(decoded.begin(), decoded.end() - 1);
  sg::Tensor tgt = sg::from_vector(decoder_in, {1, L - 1});
  model.forward(src, tgt);

  std::vector<std::string> src_labels = labels(src.to_vector<int64_t>());
  std::vector<std::string> tgt_labels = labels(decoder_in);
  std::vector<Heatmap> cross, self;
  const auto& layers = model.decoder->layers;
  for (size_t i = 0; i < layers->size(); ++i) {
    auto layer = layers->at<sg::nn::DecoderLayer>(i);
    auto c = heads_of(layer->last_cross_attention, static_cast<int64_t>(i), tgt_labels, src_labels);
    auto s = heads_of(layer->last_self_attention, static_cast<int64_t>(i), tgt_labels, tgt_labels);
    cross.insert(cross.end(), c.begin(), c.end());
    self.insert(self.end(), s.begin(), s.end());
  }
  const int columns = static_cast<int>(config.heads);
  write_file_atomically(
      out_dir + "/cross_attention.svg",
      heatmap_grid(fmt::format("Decoder cross-attention ({})", task_name(config.task)), cross,
                   columns, "source tokens", "decoder input tokens"));
  write_file_atomically(out_dir + "/self_attention.svg",
                        heatmap_grid("Decoder self-attention (causal mask)", self, columns,
                                     "decoder input tokens", "decoder input tokens"));
}

}  // namespace copy_task
