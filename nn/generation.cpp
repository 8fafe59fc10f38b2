#include "nn/generation.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>

#include <fmt/ranges.h>

#include "autograd/error.h"
#include "autograd/factory.h"
#include "autograd/grad_mode.h"

namespace sg::nn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

void check_options(const char* op, const GenerationOptions& o) {
  SG_CHECK(o.max_length > 0, "{}: max_length must be positive, got {}", op, o.max_length);
  SG_CHECK(o.bos >= 0, "{}: bos must be a token id, got {}", op, o.bos);
  SG_CHECK(o.eos != o.pad || o.eos < 0, "{}: eos and pad are the same token {}", op, o.eos);
  SG_CHECK(o.min_length >= 0 && o.min_length < o.max_length,
           "{}: min_length must be in [0, max_length {}), got {}", op, o.max_length, o.min_length);
  SG_CHECK(o.eos >= 0 || (o.min_length == 0 && !o.force_eos_at_max_length),
           "{}: min_length and force_eos_at_max_length need an eos token", op);
  for (int64_t token : o.suppress) {
    SG_CHECK(token >= 0 && token != o.eos,
             "{}: suppress holds {}, which is not a token id other than eos ({})", op, token,
             o.eos);
  }
}

void check_options(const char* op, const Tensor& src, const GenerationOptions& o) {
  SG_CHECK(src.dim() == 2 && src.size(0) > 0, "{}: src must be [B, S] with B > 0, got {}", op,
           src.shape());
  check_options(op, o);
}

void check_options(const char* op, int64_t rows, const GenerationOptions& o) {
  SG_CHECK(rows > 0, "{}: rows must be positive, got {}", op, rows);
  check_options(op, o);
}

// The log-probabilities of the next token, [rows × V] row-major, from the state's logits.
std::vector<double> next_log_probs(DecodingState& state, const std::vector<int64_t>& tokens,
                                   int64_t& vocab) {
  Tensor logits = state.step(tokens);
  SG_CHECK(logits.dim() == 2 && logits.size(0) == static_cast<int64_t>(tokens.size()),
           "generation: step must return logits [{}, V], got {}", tokens.size(), logits.shape());
  vocab = logits.size(1);
  return logits.log_softmax(-1).to_vector<double>();
}

// Step t's rows of log-probabilities [rows × V] with what the options forbid at -inf: the
// suppressed tokens, <eos> before min_length, everything but <eos> at the last step when forced.
// Every search then never picks them (a sample's weight exp(-inf) is 0).
void forbid_tokens(std::vector<double>& log_probs, int64_t V, int64_t t,
                   const GenerationOptions& o) {
  const bool no_eos = o.eos >= 0 && t < o.min_length;
  const bool only_eos = o.force_eos_at_max_length && t == o.max_length - 1;
  for (int64_t token : o.suppress) {
    SG_CHECK(token < V, "generation: suppress holds {}, outside the vocabulary of {}", token, V);
  }
  SG_CHECK(o.eos < V, "generation: eos {} is outside the vocabulary of {}", o.eos, V);
  // Something must be left to choose: with every token forbidden, greedy search chose a
  // suppressed one (or -1), and beam search found no hypothesis at all.
  std::vector<bool> forbidden(static_cast<size_t>(V), false);
  if (o.pad >= 0 && o.pad < V) forbidden[static_cast<size_t>(o.pad)] = true;
  for (int64_t token : o.suppress) forbidden[static_cast<size_t>(token)] = true;
  if (no_eos) forbidden[static_cast<size_t>(o.eos)] = true;
  const bool eos_left = o.eos >= 0 && !forbidden[static_cast<size_t>(o.eos)];
  SG_CHECK(
      only_eos ? eos_left : std::find(forbidden.begin(), forbidden.end(), false) != forbidden.end(),
      "generation: at step {} every token of the vocabulary of {} is forbidden (pad {}, "
      "suppress [{}], eos {}{}); allow at least one",
      t, V, o.pad, fmt::join(o.suppress, ", "), o.eos,
      only_eos ? ", and only eos may end at max_length"
      : no_eos ? " before min_length"
               : "");
  if (o.suppress.empty() && !no_eos && !only_eos) return;
  for (size_t first = 0; first < log_probs.size(); first += static_cast<size_t>(V)) {
    double* row = log_probs.data() + first;
    if (only_eos) {
      for (int64_t v = 0; v < V; ++v) {
        if (v != o.eos) row[v] = kNegInf;
      }
      continue;
    }
    for (int64_t token : o.suppress) row[token] = kNegInf;
    if (no_eos) row[o.eos] = kNegInf;
  }
}

// The most likely token of one row (the first on ties), never `pad`.
int64_t argmax(const double* row, int64_t vocab, int64_t pad) {
  int64_t best = -1;
  for (int64_t v = 0; v < vocab; ++v)
    if (v != pad && (best < 0 || row[v] > row[best])) best = v;
  return best;
}

// Greedy and sampling share this loop; `choose` picks the next token of one row.
template <typename Choose>
std::vector<std::vector<int64_t>> decode_one_per_row(DecodingState& state, size_t B,
                                                     const GenerationOptions& o, Choose&& choose) {
  std::vector<std::vector<int64_t>> out(B);
  std::vector<int64_t> tokens(B, o.bos);
  std::vector<bool> done(B, false);
  size_t finished = 0;
  for (int64_t t = 0; t < o.max_length && finished < B; ++t) {
    int64_t V = 0;
    std::vector<double> log_probs = next_log_probs(state, tokens, V);
    forbid_tokens(log_probs, V, t, o);
    for (size_t b = 0; b < B; ++b) {
      if (done[b]) continue;  // keeps feeding its last token; its outputs are ignored
      const int64_t next = choose(log_probs.data() + b * static_cast<size_t>(V), V);
      tokens[b] = next;
      if (next == o.eos) {
        done[b] = true;
        ++finished;
      } else {
        out[b].push_back(next);
      }
    }
  }
  return out;
}

// The most likely token of a row, never `pad`.
struct Greedy {
  int64_t pad;
  int64_t operator()(const double* row, int64_t V) const { return argmax(row, V, pad); }
};

// Draws a token from softmax(row / temperature) restricted to the top_k, with its own seeded
// generator: the same seed gives the same sequences.
class Sampler {
 public:
  Sampler(const GenerationOptions& options, const SamplingOptions& sampling)
      : pad_(options.pad), sampling_(sampling), rng_(sampling.seed) {
    SG_CHECK(sampling.temperature > 0 && std::isfinite(sampling.temperature),
             "sample: temperature must be positive and finite, got {}", sampling.temperature);
    SG_CHECK(sampling.top_k >= 0, "sample: top_k must be >= 0, got {}", sampling.top_k);
  }

  int64_t operator()(const double* row, int64_t V) {
    // Scaled log-probabilities relative to the best, so exp() cannot overflow; the best token has
    // weight 1 and, as temperature -> 0, every other weight -> 0 (greedy).
    const int64_t best = argmax(row, V, pad_);
    weights_.assign(static_cast<size_t>(V), 0.0);
    for (int64_t v = 0; v < V; ++v)
      if (v != pad_) weights_[v] = std::exp((row[v] - row[best]) / sampling_.temperature);
    if (sampling_.top_k > 0 && sampling_.top_k < V) keep_top_k();
    double total = 0;
    for (double w : weights_) total += w;
    // A uniform double in [0, total) from the generator's bits (the standard fixes mt19937_64's
    // output, not uniform_real_distribution's algorithm), so a seed means the same on every
    // machine.
    double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * total;
    for (int64_t v = 0; v < V; ++v) {
      if (weights_[v] == 0) continue;
      if (u < weights_[v]) return v;
      u -= weights_[v];
    }
    return best;  // rounding left u at the very end
  }

 private:
  void keep_top_k() {
    std::vector<double> sorted = weights_;
    std::nth_element(sorted.begin(), sorted.begin() + (sampling_.top_k - 1), sorted.end(),
                     std::greater<>());
    const double kth = sorted[static_cast<size_t>(sampling_.top_k - 1)];
    int64_t kept = 0;  // ties at the k-th weight: keep the first ones, k in all
    for (double& w : weights_) {
      if (w > kth) ++kept;
    }
    for (double& w : weights_) {
      if (w < kth)
        w = 0;
      else if (w == kth && kept++ >= sampling_.top_k)
        w = 0;
    }
  }

  int64_t pad_;
  SamplingOptions sampling_;
  std::mt19937_64 rng_;
  std::vector<double> weights_;
};

}  // namespace

std::vector<std::vector<int64_t>> greedy_search(Seq2SeqModel& model, const Tensor& src,
                                                const GenerationOptions& options) {
  check_options("greedy_search", src, options);
  const NoGradGuard no_grad;  // from here: the encoder runs in start_generation
  return decode_one_per_row(*model.start_generation(src, options.use_cache),
                            static_cast<size_t>(src.size(0)), options, Greedy{options.pad});
}

namespace {

// A language model's rows, kRowsAtOnce at a time, one `choose` (one sampler, so one stream of
// draws) across them: a cache for every row at once grows with the count (20,000 words of
// chapter 11's model took 6.5 GB).
constexpr int64_t kRowsAtOnce = 256;

template <typename Choose>
std::vector<std::vector<int64_t>> rows_in_chunks(LanguageModel& model, int64_t rows,
                                                 const GenerationOptions& o, Choose&& choose) {
  const NoGradGuard no_grad;
  std::vector<std::vector<int64_t>> out;
  for (int64_t first = 0; first < rows; first += kRowsAtOnce) {
    const int64_t n = std::min(kRowsAtOnce, rows - first);
    auto part = decode_one_per_row(*model.start_generation(n, o.use_cache), static_cast<size_t>(n),
                                   o, choose);
    std::move(part.begin(), part.end(), std::back_inserter(out));
  }
  return out;
}

}  // namespace

std::vector<std::vector<int64_t>> greedy_search(LanguageModel& model, int64_t rows,
                                                const GenerationOptions& options) {
  check_options("greedy_search", rows, options);
  return rows_in_chunks(model, rows, options, Greedy{options.pad});
}

std::vector<std::vector<int64_t>> sample(Seq2SeqModel& model, const Tensor& src,
                                         const GenerationOptions& options,
                                         const SamplingOptions& sampling) {
  check_options("sample", src, options);
  const NoGradGuard no_grad;
  return decode_one_per_row(*model.start_generation(src, options.use_cache),
                            static_cast<size_t>(src.size(0)), options, Sampler(options, sampling));
}

std::vector<std::vector<int64_t>> sample(LanguageModel& model, int64_t rows,
                                         const GenerationOptions& options,
                                         const SamplingOptions& sampling) {
  check_options("sample", rows, options);
  return rows_in_chunks(model, rows, options, Sampler(options, sampling));
}

std::vector<std::vector<Hypothesis>> beam_search(Seq2SeqModel& model, const Tensor& src,
                                                 const GenerationOptions& o,
                                                 const BeamSearchOptions& beam) {
  check_options("beam_search", src, o);
  SG_CHECK(beam.beam_size >= 1 && beam.beam_size <= BeamSearchOptions::kMaxBeamSize,
           "beam_search: beam_size must be in [1, {}], got {}", BeamSearchOptions::kMaxBeamSize,
           beam.beam_size);
  SG_CHECK(beam.length_penalty >= 0 && std::isfinite(beam.length_penalty),
           "beam_search: length_penalty must be >= 0, got {}", beam.length_penalty);
  NoGradGuard no_grad;
  const auto B = static_cast<size_t>(src.size(0));
  const auto K = static_cast<size_t>(beam.beam_size);
  auto score = [&](double log_prob, size_t length) {
    return log_prob /
           std::pow(static_cast<double>(std::max<size_t>(length, 1)), beam.length_penalty);
  };

  // Row b*K + k holds hypothesis k of source b. At the start only k = 0 is alive (the others are
  // copies at -inf, so the first step does not pick the same extension K times).
  std::unique_ptr<DecodingState> state = model.start_generation(src, o.use_cache);
  std::vector<int64_t> rows(B * K);
  for (size_t r = 0; r < B * K; ++r) rows[r] = static_cast<int64_t>(r / K);
  state->reorder(rows);
  std::vector<Hypothesis> live(B * K);
  for (size_t r = 0; r < B * K; ++r) live[r].log_prob = r % K == 0 ? 0.0 : kNegInf;
  std::vector<int64_t> tokens(B * K, o.bos);
  std::vector<std::vector<Hypothesis>> finished(B);
  std::vector<bool> done(B, false);

  struct Candidate {
    double log_prob;
    size_t row;
    int64_t token;
  };
  for (int64_t t = 0; t < o.max_length; ++t) {
    int64_t V = 0;
    std::vector<double> log_probs = next_log_probs(*state, tokens, V);
    forbid_tokens(log_probs, V, t, o);
    std::vector<Hypothesis> next_live(B * K);
    for (size_t b = 0; b < B; ++b) {
      if (done[b]) {
        for (size_t k = 0; k < K; ++k) {
          rows[b * K + k] = static_cast<int64_t>(b * K + k);
          next_live[b * K + k] = {{}, kNegInf, kNegInf};
        }
        continue;
      }
      std::vector<Candidate> candidates;
      for (size_t k = 0; k < K; ++k) {
        const size_t r = b * K + k;
        if (live[r].log_prob == kNegInf) continue;
        for (int64_t v = 0; v < V; ++v)
          if (v != o.pad)
            candidates.push_back(
                {live[r].log_prob + log_probs[r * static_cast<size_t>(V) + v], r, v});
      }
      // The 2K best extensions suffice: at most K of them end in <eos>.
      const size_t keep = std::min(candidates.size(), 2 * K);
      std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                        candidates.end(), [](const Candidate& x, const Candidate& y) {
                          if (x.log_prob != y.log_prob) return x.log_prob > y.log_prob;
                          return x.row != y.row ? x.row < y.row : x.token < y.token;
                        });
      size_t filled = 0;
      for (size_t c = 0; c < keep && filled < K; ++c) {
        const Candidate& cand = candidates[c];
        if (cand.log_prob == kNegInf) break;
        Hypothesis h{live[cand.row].tokens, cand.log_prob, 0};
        if (cand.token == o.eos) {
          // Only an <eos> among the K best counts, as a live hypothesis would have.
          if (c < K) {
            h.score = score(h.log_prob, h.tokens.size() + 1);
            finished[b].push_back(std::move(h));
          }
          continue;
        }
        h.tokens.push_back(cand.token);
        rows[b * K + filled] = static_cast<int64_t>(cand.row);
        next_live[b * K + filled] = std::move(h);
        ++filled;
      }
      for (size_t k = filled; k < K; ++k) {  // fewer extensions than K: dead copies
        rows[b * K + k] = static_cast<int64_t>(b * K);
        next_live[b * K + k] = {{}, kNegInf, kNegInf};
      }
      if (finished[b].size() >= K || filled == 0) done[b] = true;
    }
    live = std::move(next_live);
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    state->reorder(rows);
    for (size_t r = 0; r < B * K; ++r)
      tokens[r] = live[r].tokens.empty() ? o.bos : live[r].tokens.back();
  }
  // At max_length the live hypotheses end there, unterminated.
  for (size_t b = 0; b < B; ++b) {
    if (!done[b])
      for (size_t k = 0; k < K; ++k) {
        Hypothesis& h = live[b * K + k];
        if (h.log_prob == kNegInf) continue;
        h.score = score(h.log_prob, h.tokens.size());
        finished[b].push_back(std::move(h));
      }
    std::stable_sort(finished[b].begin(), finished[b].end(),
                     [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
    if (finished[b].size() > K) finished[b].resize(K);
  }
  return finished;
}

std::vector<double> sequence_log_probs(Seq2SeqModel& model, const Tensor& src,
                                       const std::vector<std::vector<int64_t>>& targets,
                                       const GenerationOptions& options) {
  check_options("sequence_log_probs", src, options);
  const auto rows = static_cast<size_t>(src.size(0));
  SG_CHECK(targets.size() == rows, "sequence_log_probs: {} sources but {} targets", rows,
           targets.size());
  const NoGradGuard no_grad;
  size_t longest = 0;
  for (const auto& target : targets) longest = std::max(longest, target.size());
  std::unique_ptr<DecodingState> state = model.start_generation(src, options.use_cache);
  std::vector<double> out(rows, 0.0);
  std::vector<int64_t> fed(rows, options.bos);
  // Step t predicts target token t, or <eos> after the last one; a row past its end is fed
  // padding and no longer counted.
  for (size_t t = 0; t <= longest; ++t) {
    int64_t V = 0;
    const std::vector<double> log_probs = next_log_probs(*state, fed, V);
    for (size_t r = 0; r < rows; ++r) {
      if (t > targets[r].size() || (t == targets[r].size() && options.eos < 0)) continue;
      const int64_t next = t < targets[r].size() ? targets[r][t] : options.eos;
      SG_CHECK(
          next >= 0 && next < V,
          "sequence_log_probs: row {} of the batch has target token {}, outside the model's 0..{}",
          r, next, V - 1);
      out[r] += log_probs[r * static_cast<size_t>(V) + static_cast<size_t>(next)];
    }
    if (t == longest) break;
    // A row past its end is fed a token whose output is ignored: pad, or bos where there is no
    // pad (-1, which no embedding takes).
    const int64_t filler = options.pad >= 0 ? options.pad : options.bos;
    for (size_t r = 0; r < rows; ++r) fed[r] = t < targets[r].size() ? targets[r][t] : filler;
  }
  return out;
}

}  // namespace sg::nn
