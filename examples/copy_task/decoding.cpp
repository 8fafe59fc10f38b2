#include "decoding.h"

#include <algorithm>
#include <cmath>

#include "tasks.h"

namespace copy_task {

using sg::Tensor;

namespace {

// The most likely next token for each row, from the last position's logits [B, T, V]. Padding
// (id 0) is never a prediction: the model was never trained to produce it (the loss ignores
// padding), and a generated 0 would be masked as padding by every later step.
std::vector<int64_t> argmax_last(const Tensor& logits) {
  Tensor last = logits.select(1, logits.size(1) - 1);
  std::vector<int64_t> ids = last.narrow(-1, 1, last.size(-1) - 1).argmax(-1).to_vector<int64_t>();
  for (int64_t& id : ids) id += 1;
  return ids;
}

// Appends each row's log-softmax over the last position's logits [B, T, V] to `log_probs`.
void append_log_probs(const Tensor& logits, StepLogProbs* log_probs) {
  if (log_probs == nullptr) return;
  Tensor last = logits.select(1, logits.size(1) - 1).log_softmax(-1);
  const int64_t B = last.size(0), V = last.size(1);
  const std::vector<double> values = last.to_vector<double>();
  log_probs->resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    (*log_probs)[b].emplace_back(values.begin() + b * V, values.begin() + (b + 1) * V);
  }
}

}  // namespace

std::vector<std::vector<int64_t>> greedy_decode(sg::nn::Transformer& model, const Tensor& src,
                                                int64_t out_len, bool use_cache,
                                                StepLogProbs* log_probs) {
  sg::NoGradGuard no_grad;
  const int64_t B = src.size(0);
  Tensor src_mask = model.source_mask(src);
  Tensor memory = model.encode(src, src_mask);
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(B), std::vector<int64_t>{kStart});
  if (use_cache) {
    // Feed one token per step; keys and values of earlier positions come from the cache.
    sg::nn::DecoderCache cache = model.start_decoding(memory, src_mask);
    std::vector<int64_t> last(static_cast<size_t>(B), kStart);
    for (int64_t t = 1; t < out_len; ++t) {
      Tensor logits = model.decode_step(sg::from_vector(last, {B, 1}).to(src.device()), cache);
      append_log_probs(logits, log_probs);
      last = argmax_last(logits);
      for (int64_t b = 0; b < B; ++b) out[b].push_back(last[b]);
    }
    return out;
  }
  // Recompute the whole prefix at every step (the reference the cache is tested against).
  for (int64_t t = 1; t < out_len; ++t) {
    std::vector<int64_t> prefix;
    for (const auto& row : out) prefix.insert(prefix.end(), row.begin(), row.end());
    Tensor tgt = sg::from_vector(prefix, {B, t}).to(src.device());
    Tensor logits = model.decode(tgt, memory, src_mask, model.target_mask(tgt));
    append_log_probs(logits, log_probs);
    std::vector<int64_t> next = argmax_last(logits);
    for (int64_t b = 0; b < B; ++b) out[b].push_back(next[b]);
  }
  return out;
}

std::vector<int64_t> beam_search(sg::nn::Transformer& model, const Tensor& src, int64_t out_len,
                                 int64_t beam_size) {
  SG_CHECK(src.size(0) == 1, "beam_search: one source sequence at a time, got a batch of {}",
           src.size(0));
  sg::NoGradGuard no_grad;
  Tensor src_mask = model.source_mask(src);
  Tensor memory = model.encode(src, src_mask);
  struct Hypothesis {
    std::vector<int64_t> tokens;
    double log_prob;
  };
  std::vector<Hypothesis> beams{{{kStart}, 0.0}};
  for (int64_t t = 1; t < out_len; ++t) {
    // Score every extension of every hypothesis in one batch: [K, t] prefixes.
    const int64_t K = static_cast<int64_t>(beams.size());
    std::vector<int64_t> prefix;
    for (const auto& h : beams) prefix.insert(prefix.end(), h.tokens.begin(), h.tokens.end());
    Tensor tgt = sg::from_vector(prefix, {K, t}).to(src.device());
    Tensor mem = memory.expand({K, memory.size(1), memory.size(2)});
    Tensor mask = src_mask.expand({K, 1, 1, src_mask.size(3)});
    Tensor log_probs =
        model.decode(tgt, mem, mask, model.target_mask(tgt)).select(1, t - 1).log_softmax(-1);
    std::vector<double> lp = log_probs.to_vector<double>();
    const int64_t V = log_probs.size(1);
    std::vector<Hypothesis> next;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t v = 1; v < V; ++v) {  // never emit padding
        Hypothesis h = beams[k];
        h.tokens.push_back(v);
        h.log_prob += lp[k * V + v];
        next.push_back(std::move(h));
      }
    }
    std::sort(next.begin(), next.end(),
              [](const Hypothesis& a, const Hypothesis& b) { return a.log_prob > b.log_prob; });
    next.resize(std::min<size_t>(next.size(), static_cast<size_t>(beam_size)));
    beams = std::move(next);
  }
  return beams.front().tokens;
}

}  // namespace copy_task
