// Training and evaluating the G2P Transformer.
//
// One step: a batch from the bucketing loader (words of similar length, at most max_tokens
// padded tokens), teacher forcing (the decoder reads <bos> p1 .. pn and must predict p1 .. pn
// <eos>), label-smoothed cross-entropy ignoring padding, Adam with a cosine (or Noam) schedule
// (sg::optim::WarmupCosineLR, NoamLR), and with --ema a moving average of the weights updated
// after the step. Every eval_every steps: greedy WER/PER on dev words (of the average, with
// --ema); the best model by dev WER is model.safetensors. last.safetensors holds everything
// --resume needs: the model, the optimizer ("optimizer.*"), the moving average ("ema.*"), the
// loader's position, the dropout generator's state and the history, in one file
// (sg::train::RunDirectory). With --average-last K the evaluated weights are also saved every
// checkpoint_every steps (the newest K kept), and at the end their mean is evaluated, saved as
// averaged.safetensors, and becomes model.safetensors if its dev WER is the best.
#pragma once

#include <memory>
#include <string>

#include "config.h"
#include "g2p_data.h"
#include "nn/data/pronunciation_candidates.h"
#include "train/trainer.h"

namespace g2p {

// WER and PER, with and without stress, and the mistakes by kind: the rule every G2P system here
// is scored by (sg::data::score_pronunciations).
using ErrorRates = sg::data::PronunciationScores;

// Trains through sg::train::Trainer: `options` says where and how the run goes (--out, --resume,
// --overwrite, --stop-after, --bf16, --quiet, --metrics-json); the config's loop options are
// applied over it. The result's summary is what `g2p train` prints.
sg::train::FitResult train(const Config& config, const sg::train::TrainerOptions& options);

// A trained model with its vocabularies.
struct Model {
  Config config;
  sg::data::Vocabulary letters, phonemes;
  std::shared_ptr<sg::nn::Transformer> transformer;

  // Pronunciations of the words (lower case, each one the model can spell: unspellable()), 128
  // at a time: greedy when beam_size is 1, else beam search ranking finished hypotheses by
  // log P / length^length_penalty (sg::nn::generate_in_batches).
  std::vector<std::vector<std::string>> pronounce(const std::vector<std::string>& words,
                                                  int64_t beam_size = 1,
                                                  double length_penalty = 1.0) const;
  // The model's beam n-best and the n-gram's 5-best for each word, each scored by both
  // (sg::data::pronunciation_candidates).
  std::vector<std::vector<sg::data::PronunciationCandidate>> candidates(
      const std::vector<std::string>& words, int64_t beam_size, double length_penalty,
      const sg::data::JointSequenceG2p& ngram) const;
};
Model load_model(const std::string& checkpoint);

// The joint-sequence n-gram beside the model: with it, each word's pronunciation is chosen from
// both n-best lists by the model's log-probability plus `weight` times the n-gram's
// (sg::data::choose_pronunciation; chapter 12b, "Two systems, one choice").
struct Rescoring {
  const sg::data::JointSequenceG2p* ngram = nullptr;
  double weight = 0;
};

// The model's pronunciations of the first `limit` of `words` (all of them when 0), decoded in
// batches, and their WER/PER.
struct Decoded {
  std::vector<Word> words;  // those decoded
  std::vector<std::vector<std::string>> predicted;
  ErrorRates rates;
};
Decoded decode(const Model& model, const std::vector<Word>& words, int64_t beam_size,
               int64_t limit = 0, double length_penalty = 1.0);
inline ErrorRates evaluate(const Model& model, const std::vector<Word>& words, int64_t beam_size,
                           int64_t limit = 0, double length_penalty = 1.0) {
  return decode(model, words, beam_size, limit, length_penalty).rates;
}

// With the n-gram, from one pass of both searches: the beam's own best, and the pronunciations
// chosen with the n-gram.
struct Rescored {
  Decoded beam, rescored;
};
Rescored decode(const Model& model, const std::vector<Word>& words, int64_t beam_size,
                int64_t limit, double length_penalty, Rescoring rescoring);

// The cross-attention of the last decoder layer, averaged over heads, for one word: rows are the
// predicted phonemes, columns the letters. Written as an SVG heatmap.
void write_attention_heatmap(const Model& model, const std::string& word, const std::string& path);

}  // namespace g2p
