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
        prefixes_(memory_.size(0)) {}

  Tensor step(const std::vector<int64_t>& tokens) override {
    const Tensor tgt = prefixes_.append(tokens, memory_.device());
    const int64_t T = tgt.size(1);
    // Generated tokens are never padding: a causal mask alone, as the cached path uses.
    Tensor logits = model_.decode(tgt, memory_, src_mask_, make_causal_mask(T, memory_.device()));
    return logits.select(1, T - 1);
  }

  void reorder(const std::vector<int64_t>& rows) override {
    Tensor index = rows_index(rows, memory_.device());
    memory_ = memory_.index_select(0, index);
    src_mask_ = src_mask_.index_select(0, index);
    prefixes_.reorder(rows);
  }

 private:
  Transformer& model_;
  Tensor memory_, src_mask_;
  Prefixes prefixes_;
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
