// Generating target sequences from an encoder-decoder model: greedy search, beam search and
// sampling, for any model that implements Seq2SeqModel (the Transformer does); greedy search and
// sampling also for a decoder-only language model, from <bos> alone (LanguageModel, which
// DecoderOnlyTransformer implements).
//
//   sg::nn::GenerationOptions g;         // bos 1, eos 2, pad 0, at most 64 tokens, KV cache on
//   auto best = sg::nn::greedy_search(model, src, g);                 // src [B, S] -> B sequences
//   auto beams = sg::nn::beam_search(model, src, g, {.beam_size = 5});   // B lists, best first
//   auto drawn = sg::nn::sample(model, src, g, {.temperature = 0.8, .top_k = 5, .seed = 1});
//   auto words = sg::nn::sample(language_model, /*rows=*/10, g, {.temperature = 0.8});
//   auto all = sg::nn::generate_in_batches(model, {{5, 6, 7}, {8, 9}}, g, {.beam_size = 5});
//   auto lp = sg::nn::score_in_batches(model, {{5, 6, 7}}, {{3, 4}}, g);   // log P(3 4 <eos> | ..)
//
// Every search returns the generated tokens only: no <bos>, and no <eos> (a sequence stops there).
// With eos = -1 there is no end symbol and every sequence has max_length tokens (the copy task).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/tensor.h"

namespace sg::nn {

// The decoder's side of generation for one batch of rows: feed one token per row, get the logits
// of the next position. A row is one hypothesis; beam search keeps beam_size rows per source.
class DecodingState {
 public:
  virtual ~DecodingState() = default;
  // tokens: one per row -> logits [rows, target vocabulary] for the position after them.
  virtual Tensor step(const std::vector<int64_t>& tokens) = 0;
  // Row i becomes the old row rows[i] (beam search copies the hypotheses it keeps, drops the
  // rest). The number of rows may change.
  virtual void reorder(const std::vector<int64_t>& rows) = 0;
};

// The tokens each row was fed so far, for a DecodingState that runs a row's whole prefix at each
// step (no key-value cache): append() adds one token per row and returns the prefixes as
// [rows, T]; reorder() follows DecodingState::reorder.
class Prefixes {
 public:
  explicit Prefixes(int64_t rows);
  Tensor append(const std::vector<int64_t>& tokens, Device device);
  void reorder(const std::vector<int64_t>& rows);

 private:
  std::vector<std::vector<int64_t>> rows_;
};

// What a model implements to be generated from: encode a batch of sources [B, S] once, and return
// the state that decodes against it. With use_cache, each step runs only the new token through
// the decoder and reuses the keys and values of earlier positions; without, it recomputes the
// whole prefix. Both must give the same logits (the tests compare them).
class Seq2SeqModel {
 public:
  virtual ~Seq2SeqModel() = default;
  virtual std::unique_ptr<DecodingState> start_generation(const Tensor& src, bool use_cache) = 0;
};

// A decoder-only model: every row starts from <bos> alone, with nothing to encode.
class LanguageModel {
 public:
  virtual ~LanguageModel() = default;
  virtual std::unique_ptr<DecodingState> start_generation(int64_t rows, bool use_cache) = 0;
};

struct GenerationOptions {
  int64_t max_length = 64;  // generated tokens at most, <eos> included
  int64_t bos = 1;          // the decoder's first input
  int64_t eos = 2;          // ends a sequence; -1: no end symbol
  int64_t pad = 0;          // never generated (the loss never trained it); -1: no such token
  bool use_cache = true;
  // Tokens never generated besides pad (Hugging Face's suppress_tokens), e.g. <unk> and <bos>.
  std::vector<int64_t> suppress;
  // <eos> is not generated before this many tokens (Hugging Face's min_new_tokens): with 1, no
  // output is empty.
  int64_t min_length = 0;
  // The last of max_length tokens is <eos> (Hugging Face's forced_eos_token_id), so an output
  // ends within max_length instead of being cut off without its end.
  bool force_eos_at_max_length = false;
};

struct BeamSearchOptions {
  // In [1, kMaxBeamSize]: each hypothesis is a row of the decoder's batch, so a beam of millions
  // is a mistake to report, not a batch to allocate.
  static constexpr int64_t kMaxBeamSize = 4096;
  int64_t beam_size = 4;
  // A finished hypothesis is ranked by log P / length^length_penalty (length counts its <eos>).
  // 0 ranks by probability alone, which favours short sequences; 1 by the mean log-probability.
  double length_penalty = 1.0;
};

struct Hypothesis {
  std::vector<int64_t> tokens;  // without <bos> and <eos>
  double log_prob = 0;          // sum of the log-probabilities of its tokens (and its <eos>)
  double score = 0;             // log_prob / length^length_penalty
};

struct SamplingOptions {
  double temperature = 1.0;  // > 0; below 1 sharpens the distribution, towards greedy
  int64_t top_k = 0;         // draw among the k most likely tokens only; 0 = all
  uint64_t seed = 0;
};

// The most likely token at every step: B sequences.
std::vector<std::vector<int64_t>> greedy_search(Seq2SeqModel& model, const Tensor& src,
                                                const GenerationOptions& options = {});

// The same for a language model: `rows` sequences from <bos>.
std::vector<std::vector<int64_t>> greedy_search(LanguageModel& model, int64_t rows,
                                                const GenerationOptions& options = {});

// Keeps the beam_size most probable prefixes per source at every step; a prefix that produces
// <eos> is finished. A source stops when beam_size hypotheses are finished (or at max_length,
// where the live ones count as finished). Returns, per source, its finished hypotheses best first.
std::vector<std::vector<Hypothesis>> beam_search(Seq2SeqModel& model, const Tensor& src,
                                                 const GenerationOptions& options,
                                                 const BeamSearchOptions& beam);

// Any number of sources, each a list of token ids: padded with options.pad into batches of
// batch_size rows (a batch's memory grows with its rows times beam_size) on `device`, and decoded
// by greedy search when beam.beam_size is 1, else by beam search, keeping each source's best.
// What a program that decodes a file or a split calls; the result is in the sources' order.
std::vector<std::vector<int64_t>> generate_in_batches(
    Seq2SeqModel& model, const std::vector<std::vector<int64_t>>& sources,
    const GenerationOptions& options, const BeamSearchOptions& beam = {.beam_size = 1},
    int64_t batch_size = 128, Device device = Device::cpu());

// beam_search over any number of sources, batched as generate_in_batches batches: per source, its
// finished hypotheses best first (the n-best a rescorer reads).
std::vector<std::vector<Hypothesis>> beam_search_in_batches(
    Seq2SeqModel& model, const std::vector<std::vector<int64_t>>& sources,
    const GenerationOptions& options, const BeamSearchOptions& beam, int64_t batch_size = 128,
    Device device = Device::cpu());

// log P(targets[b], <eos> | src row b) for each row of a batch [B, S]: the decoder fed <bos> and
// the target, each next token's log-probability summed, <eos>'s last (none with eos = -1) -- what
// beam_search's Hypothesis::log_prob is for the same tokens. For scoring sequences another
// system proposed.
std::vector<double> sequence_log_probs(Seq2SeqModel& model, const Tensor& src,
                                       const std::vector<std::vector<int64_t>>& targets,
                                       const GenerationOptions& options);

// sequence_log_probs over any number of (source, target) pairs, batched as generate_in_batches
// batches.
std::vector<double> score_in_batches(Seq2SeqModel& model,
                                     const std::vector<std::vector<int64_t>>& sources,
                                     const std::vector<std::vector<int64_t>>& targets,
                                     const GenerationOptions& options, int64_t batch_size = 128,
                                     Device device = Device::cpu());

// Draws every token from softmax(logits / temperature), restricted to the top_k; seeded, so the
// same seed gives the same sequences.
std::vector<std::vector<int64_t>> sample(Seq2SeqModel& model, const Tensor& src,
                                         const GenerationOptions& options,
                                         const SamplingOptions& sampling);

// The same for a language model: `rows` sequences from <bos>, 256 at a time (memory stays bounded
// whatever the count; the draws continue from one chunk to the next).
std::vector<std::vector<int64_t>> sample(LanguageModel& model, int64_t rows,
                                         const GenerationOptions& options,
                                         const SamplingOptions& sampling);

}  // namespace sg::nn
