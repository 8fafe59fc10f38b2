#include "decoding.h"

#include "tasks.h"

namespace copy_task {

namespace {

// The copy task's symbols: 0 pads (never generated), 1 starts, no end symbol.
sg::nn::GenerationOptions generation_options(int64_t out_len, bool use_cache) {
  return {.max_length = out_len - 1, .bos = kStart, .eos = -1, .pad = 0, .use_cache = use_cache};
}

// Each step's log-softmax for the decoded sequences (rows of out_len tokens, the start symbol
// first): one decoder pass over the whole output, which gives at every position the distribution
// that greedy decoding chose that position's token from.
StepLogProbs step_log_probs(sg::nn::Transformer& model, const sg::Tensor& src,
                            const std::vector<std::vector<int64_t>>& decoded) {
  sg::NoGradGuard no_grad;
  const int64_t B = static_cast<int64_t>(decoded.size());
  const int64_t T = static_cast<int64_t>(decoded[0].size()) - 1;  // the last token feeds nothing
  std::vector<int64_t> inputs;
  for (const auto& row : decoded) inputs.insert(inputs.end(), row.begin(), row.end() - 1);
  const sg::Tensor tgt = sg::from_vector(inputs, {B, T}).to(src.device());
  const sg::Tensor src_mask = model.source_mask(src);
  const sg::Tensor memory = model.encode(src, src_mask);
  const sg::Tensor log_probs =
      model.decode(tgt, memory, src_mask, model.target_mask(tgt)).log_softmax(-1);  // [B, T, V]
  const int64_t V = log_probs.size(2);
  const std::vector<double> values = log_probs.to_vector<double>();
  StepLogProbs out(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const auto first = values.begin() + (b * T + t) * V;
      out[b].emplace_back(first, first + V);
    }
  }
  return out;
}

}  // namespace

std::vector<std::vector<int64_t>> greedy_decode(sg::nn::Transformer& model, const sg::Tensor& src,
                                                int64_t out_len, bool use_cache,
                                                StepLogProbs* log_probs) {
  if (out_len <= 1) {
    if (log_probs != nullptr) log_probs->assign(static_cast<size_t>(src.size(0)), {});
    return std::vector<std::vector<int64_t>>(static_cast<size_t>(src.size(0)), {kStart});
  }
  auto generated = sg::nn::greedy_search(model, src, generation_options(out_len, use_cache));
  for (auto& tokens : generated) tokens.insert(tokens.begin(), kStart);
  if (log_probs != nullptr) *log_probs = step_log_probs(model, src, generated);
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
