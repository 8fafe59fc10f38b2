// Decoding the copy task with the library's generation API (nn/generation.h): the task has no
// end symbol, so every output has exactly out_len tokens, the start symbol first.
//
// With use_cache, each step feeds only the newest token through the decoder and reuses the keys
// and values of earlier positions (Transformer::decode_step); without it, every step recomputes
// the whole prefix. Both give the same tokens (tested); the cache makes decoding O(T) per step
// instead of O(T²).
#pragma once

#include <vector>

#include "nn/nn.h"

namespace copy_task {

// Per sequence, per step, the log-probability of every vocabulary entry: [B][out_len - 1][V].
using StepLogProbs = std::vector<std::vector<std::vector<double>>>;

// src [B, L] int64. Returns B sequences of out_len tokens each, the start symbol first. With
// log_probs, also each step's log-softmax of the last position's logits (decode --print-logits),
// so that a decode can be compared number by number with another implementation's.
std::vector<std::vector<int64_t>> greedy_decode(sg::nn::Transformer& model, const sg::Tensor& src,
                                                int64_t out_len, bool use_cache = true,
                                                StepLogProbs* log_probs = nullptr);

// Beam search for one source sequence [1, L]: the most probable sequence of out_len tokens under
// the model (sum of log-probabilities), keeping beam_size hypotheses per step.
std::vector<int64_t> beam_search(sg::nn::Transformer& model, const sg::Tensor& src, int64_t out_len,
                                 int64_t beam_size, bool use_cache = true);

}  // namespace copy_task
