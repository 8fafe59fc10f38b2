// Heatmaps as SVG text, for attention weights: one map per head, laid out in a grid (one row per
// layer), each cell coloured from white (0) to dark blue (1) and carrying its value (hover in a
// browser shows it).
//
//   std::vector<sg::train::Heatmap> maps = sg::train::heatmaps_of(
//       weights.select(0, 0), {"head 0", "head 1"}, target_tokens, source_tokens);  // [H, T, S]
//   std::string svg = sg::train::heatmap_grid("Cross-attention", maps, /*columns=*/2,
//                                             "source tokens", "target tokens");
#pragma once

#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace sg::train {

struct Heatmap {
  std::string title;
  std::vector<std::vector<double>> values;  // rows x cols, in [0, 1] (attention probabilities)
  std::vector<std::string> row_labels, col_labels;
};

// The maps in a grid of `columns` per row. Every map has the same rows x cols (at least 1 x 1)
// and finite values; labels are optional (at most one per row or column).
std::string heatmap_grid(const std::string& title, const std::vector<Heatmap>& maps, int columns,
                         const std::string& x_label, const std::string& y_label);

// One map per leading index of weights [N, T, S] (e.g. a layer's heads), titled titles[n].
std::vector<Heatmap> heatmaps_of(const Tensor& weights, const std::vector<std::string>& titles,
                                 const std::vector<std::string>& row_labels,
                                 const std::vector<std::string>& col_labels);

}  // namespace sg::train
