#include "decoding.h"

#include "tasks.h"

namespace copy_task {

namespace {

// The copy task's symbols: 0 pads (never generated), 1 starts, no end symbol.
sg::nn::GenerationOptions generation_options(int64_t out_len, bool use_cache) {
  return {.max_length = out_len - 1, .bos = kStart, .eos = -1, .pad = 0, .use_cache = use_cache};
}

}  // namespace

std::vector<std::vector<int64_t>> greedy_decode(sg::nn::Transformer& model, const sg::Tensor& src,
                                                int64_t out_len, bool use_cache) {
  if (out_len <= 1)
    return std::vector<std::vector<int64_t>>(static_cast<size_t>(src.size(0)), {kStart});
  auto generated = sg::nn::greedy_search(model, src, generation_options(out_len, use_cache));
  for (auto& tokens : generated) tokens.insert(tokens.begin(), kStart);
  return generated;
}

std::vector<int64_t> beam_search(sg::nn::Transformer& model, const sg::Tensor& src, int64_t out_len,
                                 int64_t beam_size, bool use_cache) {
  SG_CHECK(src.size(0) == 1, "beam_search: one source sequence at a time, got a batch of {}",
           src.size(0));
  if (out_len <= 1) return {kStart};
  // Every hypothesis has out_len tokens, so the length penalty cannot change the ranking.
  auto beams = sg::nn::beam_search(model, src, generation_options(out_len, use_cache),
                                   {.beam_size = beam_size, .length_penalty = 0.0});
  std::vector<int64_t> best = beams[0].front().tokens;
  best.insert(best.begin(), kStart);
  return best;
}

}  // namespace copy_task
