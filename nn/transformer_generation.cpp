// The Transformer's DecodingState, two ways: with the key/value cache (one new token per step
// through the decoder) and without it (the whole prefix every step: the reference for the cache).
#include "autograd/error.h"
#include "autograd/factory.h"
#include "nn/transformer.h"

namespace sg::nn {

namespace {

Tensor rows_index(const std::vector<int64_t>& rows, Device device) {
  return from_vector(rows, {static_cast<int64_t>(rows.size())}).to(device);
}

class CachedState : public DecodingState {
 public:
  CachedState(Transformer& model, DecoderCache cache, Device device)
      : model_(model), cache_(std::move(cache)), device_(device) {}

  Tensor step(const std::vector<int64_t>& tokens) override {
    Tensor tgt = from_vector(tokens, {static_cast<int64_t>(tokens.size()), 1}).to(device_);
    return model_.decode_step(tgt, cache_).select(1, 0);
  }

  void reorder(const std::vector<int64_t>& rows) override {
    cache_.reorder(rows_index(rows, device_));
  }

 private:
  Transformer& model_;
  DecoderCache cache_;
  Device device_;
};

class PrefixState : public DecodingState {
 public:
  PrefixState(Transformer& model, Tensor memory, Tensor src_mask)
      : model_(model),
        memory_(std::move(memory)),
        src_mask_(std::move(src_mask)),
        prefixes_(static_cast<size_t>(memory_.size(0))) {}

  Tensor step(const std::vector<int64_t>& tokens) override {
    SG_CHECK(tokens.size() == prefixes_.size(), "Transformer generation: {} tokens for {} rows",
             tokens.size(), prefixes_.size());
    std::vector<int64_t> flat;
    for (size_t r = 0; r < tokens.size(); ++r) {
      prefixes_[r].push_back(tokens[r]);
      flat.insert(flat.end(), prefixes_[r].begin(), prefixes_[r].end());
    }
    const auto T = static_cast<int64_t>(prefixes_[0].size());
    Tensor tgt = from_vector(flat, {static_cast<int64_t>(tokens.size()), T}).to(memory_.device());
    // Generated tokens are never padding: a causal mask alone, as the cached path uses.
    Tensor logits = model_.decode(tgt, memory_, src_mask_, make_causal_mask(T, memory_.device()));
    return logits.select(1, T - 1);
  }

  void reorder(const std::vector<int64_t>& rows) override {
    Tensor index = rows_index(rows, memory_.device());
    memory_ = memory_.index_select(0, index);
    src_mask_ = src_mask_.index_select(0, index);
    std::vector<std::vector<int64_t>> next;
    next.reserve(rows.size());
    for (int64_t r : rows) next.push_back(prefixes_[static_cast<size_t>(r)]);
    prefixes_ = std::move(next);
  }

 private:
  Transformer& model_;
  Tensor memory_, src_mask_;
  std::vector<std::vector<int64_t>> prefixes_;
};

}  // namespace

std::unique_ptr<DecodingState> Transformer::start_generation(const Tensor& src, bool use_cache) {
  check_tokens("source", src);
  Tensor src_mask = source_mask(src);
  Tensor memory = encode(src, src_mask);
  if (use_cache)
    return std::make_unique<CachedState>(*this, start_decoding(memory, src_mask), src.device());
  return std::make_unique<PrefixState>(*this, memory, src_mask);
}

}  // namespace sg::nn
