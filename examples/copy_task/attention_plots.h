// Attention heatmaps for one example: what each decoder position looks at.
//   cross_attention.svg: every layer and head of the decoder's attention over the source; for
//                        copy it is the diagonal, for reverse the anti-diagonal.
//   self_attention.svg:  the decoder's masked self-attention; nothing above the diagonal (causal).
#pragma once

#include <string>

#include "config.h"
#include "nn/nn.h"

namespace copy_task {

// src [1, L]: decodes it greedily, runs the decoder once more with teacher forcing on the decoded
// tokens, and draws the attention weights that run kept.
void write_attention_plots(sg::nn::Transformer& model, const sg::Tensor& src, const Config& config,
                           const std::string& out_dir);

}  // namespace copy_task
