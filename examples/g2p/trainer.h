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
#include "nn/train/trainer.h"

namespace g2p {

struct ErrorRates {
  double wer = 0, per = 0;
  int64_t words = 0;
  // The same words scored with stress digits dropped on both sides (sg::data::without_stress).
  double wer_without_stress = 0, per_without_stress = 0;
  // The wrong words by kind (sg::data::MistakeKinds): only stress, vowels, a consonant.
  int64_t stress_mistakes = 0, vowel_mistakes = 0, consonant_mistakes = 0;
};

struct DevEvaluation {
  int64_t step = 0;
  double wer = 0, per = 0;  // greedy, on the first dev_words dev words
  double seconds = 0;       // wall seconds of training when it was taken
};

struct TrainSummary {
  int64_t steps = 0;
  double first_loss = 0, final_loss = 0;
  double train_seconds = 0, median_ms_per_step = 0;
  ErrorRates best_dev;
  int64_t best_step = 0;
  // With --average-last: the steps averaged at the end and the mean's dev error rates (greedy).
  std::vector<int64_t> averaged_steps;
  ErrorRates averaged_dev;
  std::vector<double> losses;  // every step's, from step 1 (resumed runs included)
  std::vector<DevEvaluation> evals;
};

// Trains through sg::train::Trainer: `options` says where and how the run goes (--out, --resume,
// --overwrite, --stop-after, --bf16, --quiet); the config's loop options are applied over it.
TrainSummary train(const Config& config, const sg::train::TrainerOptions& options);

// A trained model with its vocabularies.
struct Model {
  Config config;
  sg::data::Vocabulary letters, phonemes;
  std::shared_ptr<sg::nn::Transformer> transformer;

  // Pronunciations of the words (lower case, each one the model can spell: unspellable()), in
  // one batch: greedy when beam_size is 1, else beam search ranking finished hypotheses by
  // log P / length^length_penalty (sg::nn::BeamSearchOptions).
  std::vector<std::vector<std::string>> pronounce(const std::vector<std::string>& words,
                                                  int64_t beam_size = 1,
                                                  double length_penalty = 1.0) const;
};
Model load_model(const std::string& checkpoint);

// The same for any number of words, `batch` at a time (a batch's memory grows with its words
// times beam_size): what `eval` and `pronounce` decode with.
std::vector<std::vector<std::string>> pronounce_in_batches(const Model& model,
                                                           const std::vector<std::string>& words,
                                                           int64_t beam_size, size_t batch = 128,
                                                           double length_penalty = 1.0);

// WER/PER of the model on `words` (all of them when limit is 0), decoded in batches.
ErrorRates evaluate(const Model& model, const std::vector<Word>& words, int64_t beam_size,
                    int64_t limit = 0, double length_penalty = 1.0);

// The cross-attention of the last decoder layer, averaged over heads, for one word: rows are the
// predicted phonemes, columns the letters. Written as an SVG heatmap.
void write_attention_heatmap(const Model& model, const std::string& word, const std::string& path);

}  // namespace g2p
