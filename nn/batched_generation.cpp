// Decoding and scoring any number of sources in batches (nn/generation.h): each batch padded to
// its own longest source and run through the one-batch searches of generation.cpp.
#include <algorithm>

#include "autograd/error.h"
#include "nn/data/pad_sequences.h"
#include "nn/generation.h"

namespace sg::nn {

namespace {

// Calls decode(first, src) for each batch of at most batch_size sources, src padded with pad on
// `device`; `op` names the caller in errors.
template <typename Decode>
void for_each_batch(const char* op, const std::vector<std::vector<int64_t>>& sources,
                    const GenerationOptions& options, int64_t batch_size, Device device,
                    Decode decode) {
  SG_CHECK(batch_size > 0, "{}: batch_size must be positive, got {}", op, batch_size);
  SG_CHECK(options.pad >= 0, "{}: sources are padded, so pad must be a token id", op);
  for (size_t first = 0; first < sources.size(); first += static_cast<size_t>(batch_size)) {
    const auto begin = sources.begin() + static_cast<std::ptrdiff_t>(first);
    const std::vector<std::vector<int64_t>> rows(
        begin, begin + static_cast<std::ptrdiff_t>(
                           std::min(sources.size() - first, static_cast<size_t>(batch_size))));
    for (size_t r = 0; r < rows.size(); ++r) {
      SG_CHECK(!rows[r].empty(), "{}: source {} is empty", op, first + r);
    }
    decode(first, data::pad_sequences(rows, options.pad).to(device));
  }
}

}  // namespace

std::vector<std::vector<Hypothesis>> beam_search_in_batches(
    Seq2SeqModel& model, const std::vector<std::vector<int64_t>>& sources,
    const GenerationOptions& options, const BeamSearchOptions& beam, int64_t batch_size,
    Device device) {
  std::vector<std::vector<Hypothesis>> out;
  for_each_batch("beam_search_in_batches", sources, options, batch_size, device,
                 [&](size_t, const Tensor& src) {
                   for (auto& best : beam_search(model, src, options, beam))
                     out.push_back(std::move(best));
                 });
  return out;
}

std::vector<std::vector<int64_t>> generate_in_batches(
    Seq2SeqModel& model, const std::vector<std::vector<int64_t>>& sources,
    const GenerationOptions& options, const BeamSearchOptions& beam, int64_t batch_size,
    Device device) {
  SG_CHECK(beam.beam_size >= 1 && beam.beam_size <= BeamSearchOptions::kMaxBeamSize,
           "generate_in_batches: beam_size must be in [1, {}], got {}",
           BeamSearchOptions::kMaxBeamSize, beam.beam_size);
  std::vector<std::vector<int64_t>> out;
  for_each_batch(
      "generate_in_batches", sources, options, batch_size, device, [&](size_t, const Tensor& src) {
        if (beam.beam_size == 1) {
          for (auto& tokens : greedy_search(model, src, options)) out.push_back(std::move(tokens));
        } else {
          for (auto& best : beam_search(model, src, options, beam)) {
            // A beam keeps at least one hypothesis while a token is allowed at
            // every step (forbid_tokens refuses options that allow none).
            SG_CHECK(!best.empty(), "generate_in_batches: beam search found no hypothesis");
            out.push_back(std::move(best.front().tokens));
          }
        }
      });
  return out;
}

std::vector<double> score_in_batches(Seq2SeqModel& model,
                                     const std::vector<std::vector<int64_t>>& sources,
                                     const std::vector<std::vector<int64_t>>& targets,
                                     const GenerationOptions& options, int64_t batch_size,
                                     Device device) {
  SG_CHECK(sources.size() == targets.size(), "score_in_batches: {} sources but {} targets",
           sources.size(), targets.size());
  std::vector<double> out;
  for_each_batch("score_in_batches", sources, options, batch_size, device,
                 [&](size_t first, const Tensor& src) {
                   const auto begin = targets.begin() + static_cast<std::ptrdiff_t>(first);
                   const std::vector<std::vector<int64_t>> rows(begin, begin + src.size(0));
                   for (double lp : sequence_log_probs(model, src, rows, options))
                     out.push_back(lp);
                 });
  return out;
}

}  // namespace sg::nn
