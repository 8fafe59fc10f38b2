#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include "autograd/autocast.h"
#include "averaging.h"
#include "nn/atomic_file.h"
#include "nn/train/heatmap.h"
#include "nn/train/line_chart.h"
#include "nn/train/mixed_precision.h"
#include "nn/train/progress.h"
#include "nn/train/run_directory.h"
#include "run_state.h"
#include "scoring.h"

namespace g2p {

namespace fs = std::filesystem;
using sg::Tensor;
using sg::data::Vocabulary;

namespace {

void write_plots(const sg::train::History& h, const std::string& dir) {
  sg::nn::write_file_atomically(dir + "/loss.svg", sg::train::loss_chart(h.losses));
  sg::nn::write_file_atomically(
      dir + "/dev_error_rates.svg",
      sg::train::evaluation_chart(h, "Dev error rates (greedy decoding)", "fraction",
                                  {{"dev_wer", "WER"}, {"dev_per", "PER"}}));
}

}  // namespace

std::vector<std::vector<std::string>> Model::pronounce(const std::vector<std::string>& words,
                                                       int64_t beam_size,
                                                       double length_penalty) const {
  sg::NoGradGuard no_grad;
  transformer->eval();
  Tensor src = encode_words(words, letters);
  sg::nn::GenerationOptions g{
      .max_length = 64, .bos = Vocabulary::kBos, .eos = Vocabulary::kEos, .pad = Vocabulary::kPad};
  std::vector<std::vector<int64_t>> ids;
  if (beam_size <= 1) {
    ids = sg::nn::greedy_search(*transformer, src, g);
  } else {
    const sg::nn::BeamSearchOptions beam{.beam_size = beam_size, .length_penalty = length_penalty};
    for (auto& beams : sg::nn::beam_search(*transformer, src, g, beam))
      ids.push_back(beams.front().tokens);
  }
  std::vector<std::vector<std::string>> out;
  for (const auto& row : ids) out.push_back(phonemes.decode(row));
  return out;
}

Model load_model(const std::string& checkpoint) {
  Model m = read_checkpoint(checkpoint).model;
  m.transformer->eval();
  return m;
}

std::vector<std::vector<std::string>> pronounce_in_batches(const Model& model,
                                                           const std::vector<std::string>& words,
                                                           int64_t beam_size, size_t batch,
                                                           double length_penalty) {
  SG_CHECK(batch > 0, "pronounce_in_batches: batch must be positive");
  std::vector<std::vector<std::string>> out;
  for (size_t first = 0; first < words.size(); first += batch) {
    const auto last =
        words.begin() + static_cast<std::ptrdiff_t>(std::min(words.size(), first + batch));
    auto predicted = model.pronounce({words.begin() + static_cast<std::ptrdiff_t>(first), last},
                                     beam_size, length_penalty);
    for (auto& p : predicted) out.push_back(std::move(p));
  }
  return out;
}

ErrorRates evaluate(const Model& model, const std::vector<Word>& words, int64_t beam_size,
                    int64_t limit, double length_penalty) {
  const size_t n = limit > 0 ? std::min(words.size(), static_cast<size_t>(limit)) : words.size();
  const std::vector<Word> scored(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<std::string> spellings;
  for (const Word& w : scored) spellings.push_back(w.spelling);
  return score(scored, pronounce_in_batches(model, spellings, beam_size, 128, length_penalty));
}

void write_attention_heatmap(const Model& model, const std::string& word, const std::string& path) {
  sg::NoGradGuard no_grad;
  model.transformer->eval();
  const std::string spelling = normalize_word(word);
  std::vector<std::string> predicted = model.pronounce({spelling})[0];
  // Teacher forcing on the prediction: the decoder reads <bos> p1 .. pn, and row t of the last
  // layer's cross-attention says which letters it looked at to predict phoneme t+1.
  std::vector<int64_t> decoder_in{Vocabulary::kBos};
  for (int64_t id : model.phonemes.encode(predicted)) decoder_in.push_back(id);
  Tensor src = encode_words({spelling}, model.letters);
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

TrainSummary train(const Config& config, const TrainOptions& options) {
  config.validate();
  const sg::train::RunDirectory run(options.out_dir);
  run.prepare(options.resume, options.overwrite);

  Dataset data = load_dataset(config.data);
  if (config.train_words > 0 && static_cast<size_t>(config.train_words) < data.train.size())
    data.train.resize(static_cast<size_t>(config.train_words));
  SG_CHECK(!data.dev.empty(), "g2p: {} has no dev words (too small a dictionary?)", config.data);

  sg::manual_seed(config.seed);
  Model model;
  model.config = config;
  RunState state;
  sg::train::Checkpoint last;
  if (options.resume) {
    CheckpointFile c = read_checkpoint(run.read_last());
    sg::train::check_resume(c.model.config.to_map(), config.to_map(), Config::fields(),
                            c.checkpoint.path);
    model.letters = c.model.letters;
    model.phonemes = c.model.phonemes;
    model.transformer = c.model.transformer;
    state = c.state;
    last = std::move(c.checkpoint);
  } else {
    model.letters = letter_vocabulary(data.train);
    model.phonemes = phoneme_vocabulary(data.train);
    model.transformer = std::make_shared<sg::nn::Transformer>(
        config.model_options(model.letters.size(), model.phonemes.size()));
  }
  sg::optim::Adam optimizer(model.transformer->parameters(),
                            {.lr = config.base_lr(), .betas = {0.9, 0.98}, .eps = 1e-9});
  // The moving average starts as a copy of the initial weights (or is read back on resume).
  std::optional<sg::optim::ExponentialMovingAverage> ema;
  if (config.ema > 0)
    ema.emplace(*model.transformer,
                sg::optim::ExponentialMovingAverageOptions{.decay = config.ema});
  if (options.resume) {
    sg::train::restore_optimizer(last, optimizer);  // the model was loaded by read_checkpoint
    if (ema) sg::train::restore_ema(last, *ema);
    sg::default_generator().set_state(state.global_rng);
    run.remove_steps_after(state.step);  // written after last.safetensors by a killed run
  }
  // Evaluation, model.safetensors and the step checkpoints see the average, if any: swapped in
  // and back, bit for bit, so training goes on from its own weights.
  const std::string evaluated_weights = ema ? "ema" : "trained";
  auto with_evaluated_weights = [&](const auto& f) {
    if (ema) ema->swap(*model.transformer);
    f();
    if (ema) ema->swap(*model.transformer);
  };
  // The lr of the next update, from the optimizer's step count (restored by a resume).
  const std::unique_ptr<sg::optim::LRScheduler> schedule = config.make_schedule(optimizer);
  std::vector<sg::data::SequencePair> pairs =
      training_pairs(data.train, model.letters, model.phonemes);
  SG_CHECK(!options.resume || state.train_pairs == static_cast<int64_t>(pairs.size()),
           "--resume: the run was trained on {} pronunciations, {} with --train-words {} has {} "
           "(another dictionary or --train-words?)",
           state.train_pairs, config.data, config.train_words, pairs.size());
  state.train_pairs = static_cast<int64_t>(pairs.size());
  sg::data::BucketLoader loader(std::move(pairs), config.max_tokens, config.seed);
  loader.set_position(state.loader);

  const auto t_start = std::chrono::steady_clock::now();
  const double seconds_before = state.history.totals["seconds"];  // a resumed run's earlier ones
  auto elapsed_seconds = [&] {
    return seconds_before +
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  };
  auto save_last = [&] {
    state.history.totals["seconds"] = elapsed_seconds();
    state.loader = loader.position();
    state.global_rng = sg::default_generator().state();
    run.save_last(*model.transformer, optimizer, metadata_with_weights(model, state, "trained"),
                  ema ? &*ema : nullptr);
  };
  // A step checkpoint for --average-last, written before last.safetensors (Note in
  // RunDirectory::remove_steps_after).
  auto save_step = [&] {
    if (config.average_last == 0) return;
    state.history.totals["seconds"] = elapsed_seconds();
    state.loader = loader.position();
    state.global_rng = sg::default_generator().state();
    with_evaluated_weights([&] {
      run.save_step(state.step, *model.transformer,
                    metadata_with_weights(model, state, evaluated_weights), config.average_last);
    });
  };

  const int64_t end =
      options.stop_after > 0 ? std::min(options.stop_after, config.steps) : config.steps;
  sg::train::Progress progress(
      {.first_step = state.step,
       .total_steps = config.steps,
       .interactive = !options.quiet && sg::train::Progress::stderr_is_terminal(),
       .print_every = std::max<int64_t>(1, config.eval_every / 10)});
  if (options.bf16 && !options.quiet) {
    const std::string note = sg::train::bfloat16_speed_note(sg::kCPU);
    if (!note.empty()) fmt::print(stderr, "{}\n", note);
  }
  std::vector<double> step_ms;
  model.transformer->train();
  while (state.step < end) {
    const auto t0 = std::chrono::steady_clock::now();
    ++state.step;
    optimizer.zero_grad();
    sg::data::Batch batch = loader.next();
    const int64_t T = batch.target.size(1);
    Tensor decoder_in = batch.target.narrow(1, 0, T - 1);
    Tensor labels = batch.target.narrow(1, 1, T - 1).contiguous().reshape({-1});
    Tensor logits, loss;
    {
      const sg::AutocastGuard autocast(sg::kBFloat16, options.bf16);  // the forward and the loss
      logits = model.transformer->forward(batch.source, decoder_in);
      loss = sg::nn::cross_entropy(logits.reshape({-1, model.phonemes.size()}), labels,
                                   Vocabulary::kPad, config.label_smoothing);
    }
    loss.backward();  // outside autocast: each product remembers its precision
    optimizer.step();
    if (ema) ema->update(*model.transformer);
    const double loss_value = loss.item<double>();
    SG_CHECK(std::isfinite(loss_value),
             "step {}: the training loss is {}; training stopped (lower --lr-factor or raise "
             "--warmup, or resume from the last checkpoint)",
             state.step, loss_value);
    state.history.losses.push_back(loss_value);
    step_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!options.quiet) {
      sg::NoGradGuard no_grad;  // token accuracy: argmax right, padding not counted
      Tensor flat = logits.reshape({-1, model.phonemes.size()});
      Tensor real = labels.ne(static_cast<double>(Vocabulary::kPad));
      const double right = sg::logical_and(flat.argmax(-1).eq(labels), real).sum().item<double>();
      const double accuracy = right / std::max(1.0, real.sum().item<double>());
      progress.update({state.step, loss_value, accuracy, optimizer.lr()});
    }

    if (state.step % config.eval_every == 0 || state.step == config.steps) {
      ErrorRates dev;
      with_evaluated_weights([&] { dev = evaluate(model, data.dev, 1, config.dev_words); });
      model.transformer->train();
      state.history.add_evaluation(
          state.step,
          {{"dev_wer", dev.wer}, {"dev_per", dev.per}, {"eval_seconds", elapsed_seconds()}});
      const bool best = dev.wer <= state.best_wer;
      if (best) {
        state.history.totals["seconds"] = elapsed_seconds();
        state.best_wer = dev.wer, state.best_per = dev.per, state.best_step = state.step;
        state.loader = loader.position();
        state.global_rng = sg::default_generator().state();
        with_evaluated_weights([&] {
          sg::train::save_checkpoint(run.best(), *model.transformer, nullptr,
                                     metadata_with_weights(model, state, evaluated_weights));
        });
      }
      if (!options.quiet)
        progress.message(fmt::format("step {:>6}  dev WER {:5.2f}%  PER {:5.2f}% ({} words){}",
                                     state.step, 100 * dev.wer, 100 * dev.per, dev.words,
                                     best ? "  (best so far: saved)" : ""));
    }
    if (config.checkpoint_every > 0) {
      const bool every = state.step % config.checkpoint_every == 0;
      if (every || state.step == config.steps) save_step();  // the last one is averaged too
      if (every) save_last();
    }
    schedule->step();  // the lr of the next update
  }
  progress.finish();
  TrainSummary summary;
  summary.train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  if (config.average_last > 0 && state.step == config.steps) {
    // The mean of the newest step checkpoints: evaluated as the others were, and the model of the
    // run if it is the best (its state then says so, for a run resumed to train longer).
    AveragedModel averaged =
        average_models(newest_step_checkpoints(options.out_dir, config.average_last));
    summary.averaged_steps = averaged.steps;
    summary.averaged_dev = evaluate(averaged.model, data.dev, 1, config.dev_words);
    averaged.metadata["dev_wer"] = fmt::format("{}", summary.averaged_dev.wer);
    averaged.metadata["dev_per"] = fmt::format("{}", summary.averaged_dev.per);
    sg::train::save_checkpoint(run.averaged(), *averaged.model.transformer, nullptr,
                               averaged.metadata);
    const bool best = summary.averaged_dev.wer <= state.best_wer;
    if (best) {
      state.best_wer = summary.averaged_dev.wer, state.best_per = summary.averaged_dev.per;
      state.best_step = state.step;
      averaged.metadata["best_wer"] = fmt::format("{}", state.best_wer);
      averaged.metadata["best_per"] = fmt::format("{}", state.best_per);
      averaged.metadata["best_step"] = std::to_string(state.best_step);
      sg::train::save_checkpoint(run.best(), *averaged.model.transformer, nullptr,
                                 averaged.metadata);
    }
    if (!options.quiet)
      fmt::print(stderr, "mean of the checkpoints at steps {}: dev WER {:5.2f}%  PER {:5.2f}%{}\n",
                 fmt::join(summary.averaged_steps, ", "), 100 * summary.averaged_dev.wer,
                 100 * summary.averaged_dev.per, best ? "  (the best: model.safetensors)" : "");
  }
  save_last();
  write_plots(state.history, options.out_dir);
  if (fs::exists(run.best())) {
    Model best = load_model(run.best());
    // A dev word long enough for the alignment to show: the first of 8 letters or more.
    const std::vector<Word>& pool = data.dev.empty() ? data.train : data.dev;
    auto longer = std::find_if(pool.begin(), pool.end(),
                               [](const Word& w) { return w.spelling.size() >= 8; });
    const std::string example = longer != pool.end() ? longer->spelling : pool.front().spelling;
    write_attention_heatmap(best, example, options.out_dir + "/attention.svg");
  }
  summary.steps = state.step;
  summary.losses = state.history.losses;
  const sg::train::History& h = state.history;
  for (size_t i = 0; i < h.eval_steps.size(); ++i) {
    summary.evals.push_back({static_cast<int64_t>(h.eval_steps[i]), h.eval("dev_wer")[i],
                             h.eval("dev_per")[i], h.eval("eval_seconds")[i]});
  }
  summary.first_loss = summary.losses.empty() ? 0 : summary.losses.front();
  summary.final_loss = summary.losses.empty() ? 0 : summary.losses.back();
  if (!step_ms.empty()) {
    std::nth_element(step_ms.begin(),
                     step_ms.begin() + static_cast<std::ptrdiff_t>(step_ms.size() / 2),
                     step_ms.end());
    summary.median_ms_per_step = step_ms[step_ms.size() / 2];
  }
  summary.best_dev = {state.best_wer, state.best_per, 0};
  summary.best_step = state.best_step;
  return summary;
}

}  // namespace g2p
