#include "trainer.h"

#include <algorithm>

#include "nn/atomic_file.h"
#include "run_state.h"
#include "train/heatmap.h"
#include "train/line_chart.h"
#include "train/trainer.h"

namespace g2p {

using sg::Tensor;
using sg::data::Vocabulary;

namespace {

// Decoding stops after 64 tokens, <eos> included (g2p_data.h).
const sg::nn::GenerationOptions kGeneration{
    .max_length = 64, .bos = Vocabulary::kBos, .eos = Vocabulary::kEos, .pad = Vocabulary::kPad};

}  // namespace

std::vector<std::vector<std::string>> Model::pronounce(const std::vector<std::string>& words,
                                                       int64_t beam_size,
                                                       double length_penalty) const {
  sg::NoGradGuard no_grad;
  transformer->eval();
  std::vector<std::vector<int64_t>> sources;
  for (const std::string& w : words) sources.push_back(letter_ids(w, letters));
  std::vector<std::vector<std::string>> out;
  for (const auto& ids :
       sg::nn::generate_in_batches(*transformer, sources, kGeneration,
                                   {.beam_size = beam_size, .length_penalty = length_penalty}))
    out.push_back(phonemes.decode(ids));
  return out;
}

std::vector<std::vector<sg::data::PronunciationCandidate>> Model::candidates(
    const std::vector<std::string>& words, int64_t beam_size, double length_penalty,
    const sg::data::JointSequenceG2p& ngram) const {
  sg::NoGradGuard no_grad;
  transformer->eval();
  std::vector<std::vector<int64_t>> sources;
  for (const std::string& w : words) sources.push_back(letter_ids(w, letters));
  return sg::data::pronunciation_candidates(
      *transformer, sources, words, phonemes, kGeneration, ngram,
      {.beam_size = beam_size, .length_penalty = length_penalty});
}

Model load_model(const std::string& checkpoint) { return read_checkpoint(checkpoint).model; }

namespace {

// The first `limit` words (all when 0) and their spellings.
std::pair<std::vector<Word>, std::vector<std::string>> first_words(const std::vector<Word>& words,
                                                                   int64_t limit) {
  const size_t n = limit > 0 ? std::min(words.size(), static_cast<size_t>(limit)) : words.size();
  std::vector<Word> kept(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<std::string> spellings;
  for (const Word& w : kept) spellings.push_back(w.spelling);
  return {std::move(kept), std::move(spellings)};
}

Decoded scored(std::vector<Word> words, std::vector<std::vector<std::string>> predicted) {
  const ErrorRates rates = sg::data::score_pronunciations(words, predicted);
  return {std::move(words), std::move(predicted), rates};
}

}  // namespace

Decoded decode(const Model& model, const std::vector<Word>& words, int64_t beam_size, int64_t limit,
               double length_penalty) {
  auto [kept, spellings] = first_words(words, limit);
  return scored(std::move(kept), model.pronounce(spellings, beam_size, length_penalty));
}

Rescored decode(const Model& model, const std::vector<Word>& words, int64_t beam_size,
                int64_t limit, double length_penalty, Rescoring rescoring) {
  SG_CHECK(rescoring.ngram, "g2p decode: rescoring without an n-gram");
  const auto [kept, spellings] = first_words(words, limit);
  const auto lists = model.candidates(spellings, beam_size, length_penalty, *rescoring.ngram);
  std::vector<std::vector<std::string>> beam;
  for (const auto& list : lists)
    beam.push_back(list.front().phonemes);  // the model's n-best come first, best first
  return {scored(kept, std::move(beam)),
          scored(kept, sg::data::choose_pronunciations(lists, rescoring.weight, length_penalty))};
}

void write_attention_heatmap(const Model& model, const std::string& word, const std::string& path) {
  sg::NoGradGuard no_grad;
  model.transformer->eval();
  const std::string spelling = sg::data::lowercase_word(word);
  std::vector<std::string> predicted = model.pronounce({spelling})[0];
  // Teacher forcing on the prediction: the decoder reads <bos> p1 .. pn, and row t of the last
  // layer's cross-attention says which letters it looked at to predict phoneme t+1.
  std::vector<int64_t> decoder_in{Vocabulary::kBos};
  for (int64_t id : model.phonemes.encode(predicted)) decoder_in.push_back(id);
  const std::vector<int64_t> letters = letter_ids(spelling, model.letters);
  Tensor src = sg::from_vector(letters, {1, static_cast<int64_t>(letters.size())});
  Tensor tgt = sg::from_vector(decoder_in, {1, static_cast<int64_t>(decoder_in.size())});
  model.transformer->forward(src, tgt);
  const auto& layers = model.transformer->decoder->layers;
  auto last = layers->at<sg::nn::DecoderLayer>(layers->size() - 1);
  Tensor weights = last->last_cross_attention.mean(1);  // [1, T, S], the heads' mean
  std::vector<std::string> rows = predicted;
  rows.push_back("<eos>");
  const auto maps = sg::train::heatmaps_of(
      weights, {fmt::format("\"{}\" -> {}", spelling, fmt::join(predicted, " "))}, rows,
      sg::data::letters_of(spelling));
  sg::nn::write_file_atomically(path, sg::train::heatmap_grid("Cross-attention (last layer)", maps,
                                                              1, "letters", "predicted phoneme"));
}

namespace {

// G2P for the training loop: bucketed batches of (spelling, pronunciation) pairs, teacher forcing
// under label-smoothed cross-entropy, greedy WER and PER on dev words.
class G2pTask : public sg::train::TrainingTask {
 public:
  G2pTask(const Config& config, Model& model, const Dataset& data,
          std::vector<sg::data::SequencePair> pairs, std::string out_dir)
      : config_(config),
        model_(model),
        data_(data),
        train_pairs_(static_cast<int64_t>(pairs.size())),
        loader_(std::move(pairs), config.max_tokens, config.seed),
        out_dir_(std::move(out_dir)),
        dev_words_(static_cast<int64_t>(first_words(data.dev, config.dev_words).first.size())) {}

  sg::train::Batch next_batch() override {
    const sg::data::Batch batch = loader_.next();
    return {{"source", batch.source}, {"target", batch.target}};
  }

  // Teacher forcing: the decoder reads <bos> p1 .. pn and must predict p1 .. pn <eos>.
  sg::train::StepOutput training_step(const sg::train::Batch& batch) override {
    const Tensor& target = batch.at("target");
    const int64_t T = target.size(1);
    Tensor decoder_in = target.narrow(1, 0, T - 1);
    Tensor labels = target.narrow(1, 1, T - 1).contiguous().reshape({-1});
    Tensor logits = model_.transformer->forward(batch.at("source"), decoder_in)
                        .reshape({-1, model_.phonemes.size()});
    Tensor loss = sg::nn::cross_entropy(logits, labels, Vocabulary::kPad, config_.label_smoothing);
    const sg::NoGradGuard no_grad;  // token accuracy: argmax right, padding not counted
    Tensor real = labels.ne(static_cast<double>(Vocabulary::kPad));
    return {loss, sg::logical_and(logits.argmax(-1).eq(labels), real).sum(), real.sum()};
  }

  sg::train::Metrics evaluate() override {
    const ErrorRates dev = g2p::evaluate(model_, data_.dev, 1, config_.dev_words);
    return {{"dev_wer", dev.wer}, {"dev_per", dev.per}};
  }

  std::string describe(const sg::train::Metrics& m) const override {
    return fmt::format("dev WER {:5.2f}%  PER {:5.2f}% ({} words)", 100 * m.at("dev_wer"),
                       100 * m.at("dev_per"), dev_words_);
  }

  sg::nn::Metadata checkpoint_metadata() const override {
    return metadata_for(model_, {loader_.position(), train_pairs_});
  }

  std::vector<sg::train::NamedPath> input_files() const override {
    return {{"--data", config_.data}};
  }

  void load_checkpoint(const sg::train::Checkpoint& last) override {
    loader_.set_position(resume_position(last, model_, train_pairs_));
  }

  void on_train_end(const sg::train::History& history) override {
    sg::nn::write_file_atomically(
        out_dir_ + "/dev_error_rates.svg",
        sg::train::evaluation_chart(history, "Dev error rates (greedy decoding)", "fraction",
                                    {{"dev_wer", "WER"}, {"dev_per", "PER"}}));
  }
  // The charts, and the attention heatmap train() draws after the fit.
  std::vector<std::string> output_files() const override {
    return {"dev_error_rates.svg", "attention.svg"};
  }

 private:
  const Config& config_;
  Model& model_;
  const Dataset& data_;
  int64_t train_pairs_;
  sg::data::BucketLoader loader_;
  std::string out_dir_;  // where the charts go
  int64_t dev_words_;    // each evaluation's, known before the first (a resumed run reports its
                         // checkpoint's best before it evaluates)
};

// The word whose cross-attention the run draws: the first dev word of 8 letters or more.
std::string heatmap_word(const Dataset& data) {
  const std::vector<Word>& pool = data.dev.empty() ? data.train : data.dev;
  auto longer =
      std::find_if(pool.begin(), pool.end(), [](const Word& w) { return w.spelling.size() >= 8; });
  return longer != pool.end() ? longer->spelling : pool.front().spelling;
}

}  // namespace

sg::train::FitResult train(const Config& config, const sg::train::TrainerOptions& options) {
  config.validate();
  Dataset data = load_dataset(config.data);
  if (config.train_words > 0 && static_cast<size_t>(config.train_words) < data.train.size())
    data.train.resize(static_cast<size_t>(config.train_words));
  SG_CHECK(!data.dev.empty(), "g2p: {} has no dev words (too small a dictionary?)", config.data);

  sg::manual_seed(config.seed);
  Model model{config, letter_vocabulary(data.train), phoneme_vocabulary(data.train), nullptr};
  model.transformer = std::make_shared<sg::nn::Transformer>(
      config.model_options(model.letters.size(), model.phonemes.size()));
  sg::optim::Adam optimizer(model.transformer->parameters(),
                            {.lr = config.base_lr(), .betas = {0.9, 0.98}, .eps = 1e-9});
  // The lr of the next update, from the optimizer's step count (restored by a resume).
  const std::unique_ptr<sg::optim::LRScheduler> schedule = config.make_schedule(optimizer);
  G2pTask task(config, model, data, training_pairs(data.train, model.letters, model.phonemes),
               options.out_dir);
  sg::train::TrainerOptions loop = options;
  config.loop.apply_to(loop);
  loop.print_every = std::max<int64_t>(1, config.loop.eval_every / 10);
  loop.monitor = "dev_wer", loop.maximize = false;
  loop.divergence_advice = config.schedule == "cosine" ? "lower --lr or raise --warmup"
                                                       : "lower --lr-factor or raise --warmup";
  sg::train::Trainer trainer(*model.transformer, optimizer, *schedule, loop);
  sg::train::FitResult result = trainer.fit(task);
  if (result.best_step > 0) {
    write_attention_heatmap(load_model(options.out_dir + "/model.safetensors"), heatmap_word(data),
                            options.out_dir + "/attention.svg");
  }
  return result;
}

}  // namespace g2p
