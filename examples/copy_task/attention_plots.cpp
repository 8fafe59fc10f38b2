#include "attention_plots.h"

#include "decoding.h"
#include "nn/atomic_file.h"
#include "train/heatmap.h"

namespace copy_task {

using sg::train::Heatmap;

namespace {

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
    std::vector<std::string> titles;  // one map per head: "layer 1 head 0", ...
    for (int64_t h = 0; h < config.heads; ++h)
      titles.push_back(fmt::format("layer {} head {}", i, h));
    // The weights [1, H, T, S] of the one example.
    auto c = sg::train::heatmaps_of(layer->last_cross_attention.select(0, 0), titles, tgt_labels,
                                    src_labels);
    auto s = sg::train::heatmaps_of(layer->last_self_attention.select(0, 0), titles, tgt_labels,
                                    tgt_labels);
    cross.insert(cross.end(), c.begin(), c.end());
    self.insert(self.end(), s.begin(), s.end());
  }
  const int columns = static_cast<int>(config.heads);
  sg::nn::write_file_atomically(
      out_dir + "/cross_attention.svg",
      sg::train::heatmap_grid(fmt::format("Decoder cross-attention ({})", config.task), cross,
                              columns, "source tokens", "decoder input tokens"));
  sg::nn::write_file_atomically(
      out_dir + "/self_attention.svg",
      sg::train::heatmap_grid("Decoder self-attention (causal mask)", self, columns,
                              "decoder input tokens", "decoder input tokens"));
}

}  // namespace copy_task
