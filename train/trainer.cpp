#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

#include "autograd/autocast.h"
#include "autograd/deterministic.h"
#include "autograd/generator.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "nn/atomic_file.h"
#include "nn/data/split.h"
#include "nn/serialize.h"
#include "train/average_checkpoints.h"
#include "train/fit_report.h"
#include "train/graphed_step.h"
#include "train/line_chart.h"
#include "train/metadata.h"
#include "train/metrics_log.h"
#include "train/mixed_precision.h"
#include "train/progress.h"
#include "train/run_directory.h"
#include "train/saved_run_state.h"

namespace sg::train {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

const std::vector<std::string> Trainer::kLoopKeys = {
    "step",    "global_rng",     "rank_rngs",        "history",   "best_step",  "best_metrics",
    "weights", "averaged_steps", "averaged_metrics", "precision", "input_files"};

std::string TrainingTask::describe(const Metrics& metrics) const {
  std::string line;
  for (const auto& [name, value] : metrics) {
    line += fmt::format("{}{} {:.6g}", line.empty() ? "" : "  ", name, value);
  }
  return line;
}

void TrainerOptions::validate() const {
  SG_CHECK(!out_dir.empty(), "--out is empty: give the run's directory");
  SG_CHECK(!(resume && overwrite), "--resume and --overwrite exclude each other");
  SG_CHECK(steps >= 1, "--steps must be at least 1, got {}", steps);
  SG_CHECK(stop_after >= 0, "Trainer: stop_after must not be negative, got {}", stop_after);
  SG_CHECK(eval_every >= 1, "--eval-every must be at least 1, got {}", eval_every);
  SG_CHECK(checkpoint_every >= 0, "--checkpoint-every must not be negative, got {}",
           checkpoint_every);
  SG_CHECK(average_last >= 0, "--average-last must not be negative, got {}", average_last);
  check_checkpoint_averaging(average_last, checkpoint_every);
  SG_CHECK(sync_every >= 1, "--sync-every must be at least 1, got {}", sync_every);
  SG_CHECK(print_every >= 0, "Trainer: print_every must not be negative, got {}", print_every);
  check_moving_average(ema_decay);
  SG_CHECK(!(cuda_graph && ema_decay > 0),
           "--cuda-graph with a moving average (--ema) is not supported: its update runs outside "
           "the graph");
  SG_CHECK(!monitor.empty(), "Trainer: no monitor (the metric that picks model.safetensors)");
}

void TrainerOptions::check_moving_average(double ema_decay) {
  SG_CHECK(ema_decay >= 0 && ema_decay < 1,
           "--ema must be a decay in (0, 1) (or 0: no moving average), got {}", ema_decay);
}

void TrainerOptions::check_checkpoint_averaging(int64_t average_last, int64_t checkpoint_every) {
  SG_CHECK(average_last == 0 || checkpoint_every > 0,
           "--average-last {} needs step checkpoints to average: --checkpoint-every must be "
           "positive",
           average_last);
}

// One fit(): the loop's state, and each thing the loop does as a function of its own.
struct Trainer::Loop {
  Trainer& trainer;
  TrainingTask& task;
  const TrainerOptions& o;
  nn::Module& model;
  DataParallelRun& ranks;
  const Device device;  // the model's, where each batch goes
  const RunDirectory run;
  // What each rank's own dropout stream is derived from: the generator as the program seeded it,
  // alike on every rank.
  const uint64_t dropout_seed = default_generator().state();
  int64_t step = 0;
  History history;
  int64_t best_step = 0;
  Metrics best;
  std::vector<int64_t> averaged_steps;
  Metrics averaged;
  const Clock::time_point start = Clock::now();
  double seconds_before = 0;  // a resumed run's earlier training time
  // Each step's [loss, right, counted] stays on the device until sync() reads all pending steps
  // back in one copy (float64: exact for a float32 loss and for counts below 2^53).
  struct PendingStep {
    int64_t step;
    double lr;
    Tensor stats;
  };
  std::vector<PendingStep> pending;
  // A step's time is its sync window's wall time (from the start of the window's first step to the
  // end of the read) over the window's steps: without a read, a step on a GPU only queues.
  Clock::time_point window_start = Clock::now();
  std::vector<double> step_ms;
  std::optional<Progress> progress;
  // Each input file's FNV-1a of its bytes, by flag: a resume refuses other contents.
  nlohmann::json input_digests = nlohmann::json::object();
  std::optional<RunLock> lock;  // the writing rank's, for the whole fit
  // The steps on the device, eagerly or as a CUDA graph.
  GraphedStep graphed;

  Loop(Trainer& t, TrainingTask& tk)
      : trainer(t),
        task(tk),
        o(t.options_),
        model(t.model_),
        ranks(*t.ranks_),
        device(t.model_.parameters().front().device()),
        run(t.options_.out_dir),
        graphed([this](const Batch& batch) { return device_step(batch); }, t.options_.cuda_graph,
                device) {}

  double elapsed() const { return seconds_before + seconds_since(start); }

  // The weights evaluation, model.safetensors and step checkpoints see: the moving average if the
  // run keeps one, swapped in and back bit for bit, so training goes on from its own weights.
  std::string evaluated_weights() const { return trainer.ema_ ? "ema" : "trained"; }
  void with_evaluated_weights(const std::function<void()>& f) {
    if (trainer.ema_) trainer.ema_->swap(model);
    try {
      f();
    } catch (...) {
      if (trainer.ema_) trainer.ema_->swap(model);
      throw;
    }
    if (trainer.ema_) trainer.ema_->swap(model);
  }

  // The dropout streams a checkpoint holds: this process's, or in last.safetensors every rank's
  // (gathered by save_last on every rank).
  nn::Metadata metadata(const std::string& weights, const DropoutStreams& streams = {}) {
    history.totals["seconds"] = elapsed();
    nn::Metadata md = task.checkpoint_metadata();
    for (const std::string& key : kLoopKeys) {
      SG_CHECK(!md.contains(key),
               "Trainer: the task's checkpoint metadata has '{}', a key the loop writes", key);
    }
    md["step"] = std::to_string(step);
    write_dropout_streams(md, streams.per_rank.empty()
                                  ? DropoutStreams{.global = default_generator().state()}
                                  : streams);
    md["history"] = history.to_json();
    md["best_step"] = std::to_string(best_step);
    md["best_metrics"] = metrics_to_json(best);
    md["weights"] = weights;
    md["precision"] = precision_name(o.bf16);
    md["input_files"] = input_digests.dump();
    if (weights == "average") {
      mark_as_average(md, averaged_steps);
      md["averaged_metrics"] = metrics_to_json(averaged);
    }
    return md;
  }

  // No checkpoint holds an infinity or a NaN: a run that produced one stops instead.
  void check_finite(const std::string& path) const {
    const auto bad = first_non_finite(model.state_dict());
    SG_CHECK(!bad, "step {}: the model's tensor '{}' holds infinities or NaNs; not saving {}", step,
             bad.value_or(""), path);
  }
  void save_model(const std::string& path, const std::string& weights) {
    check_finite(path);
    save_checkpoint(path, model, nullptr, metadata(weights));
  }
  // Collective: every rank's dropout stream and a sharded optimizer's state go to rank 0 first.
  void save_last() {
    const DropoutStreams streams = ranks.dropout_streams();
    ranks.gather_optimizer_state(trainer.optimizer_);
    if (!ranks.writes()) return;
    check_finite(run.last());
    run.save_last(model, trainer.optimizer_, metadata("trained", streams), trainer.ema_.get());
  }
  // A step checkpoint for average_last, written before last.safetensors (see
  // RunDirectory::remove_steps_after).
  void save_step() {
    if (o.average_last == 0 || !ranks.writes()) return;
    with_evaluated_weights([&] {
      check_finite(run.step_checkpoint(step));
      run.save_step(step, model, metadata(evaluated_weights()), o.average_last);
    });
  }

  void resume() {
    Checkpoint last = run.read_last();
    check_same_precision(last.metadata, o.bf16, last.path);
    check_same_inputs(last);
    task.load_checkpoint(last);
    restore(last, model, &trainer.optimizer_);
    // The lr of the next update, from the restored step count: a checkpoint written mid-run holds
    // the lr of the step just taken (the schedule steps after the checkpoints of a step).
    trainer.schedule_.step();
    if (trainer.ema_) restore_ema(last, *trainer.ema_);
    const MetadataReader md(last.metadata, last.path);
    step = md.integer("step");
    history = History::from_json(md.text("history"), last.path);
    SG_CHECK(step >= 0 && history.losses.size() == static_cast<size_t>(step),
             "{}: checkpoint metadata 'history' holds {} losses for step {}", last.path,
             history.losses.size(), step);
    SG_CHECK(trainer.optimizer_.step_count() == step,
             "{}: the optimizer's state has taken {} steps, the run {}", last.path,
             trainer.optimizer_.step_count(), step);
    best_step = md.integer("best_step");
    best = metrics_from_json(md, "best_metrics");
    const std::string note = ranks.start_dropout_streams(
        dropout_seed, /*resumed=*/true, step, read_dropout_streams(md), /*has_dropout=*/true);
    if (!note.empty() && ranks.writes()) fmt::print(stderr, "{}\n", note);
    seconds_before = history.totals.contains("seconds") ? history.totals["seconds"] : 0.0;
    run.remove_steps_after(step);  // written after last.safetensors by a killed run
    if (ranks.writes()) drop_json_lines_after(o.log_jsonl, step, "--log-jsonl");  // its log too
  }

  // The task's next batch as the step reads it: this rank's rows of each tensor, on the model's
  // device.
  Batch next_batch() {
    Batch batch = task.next_batch();
    SG_CHECK(!batch.empty(), "Trainer: the task's next_batch() gave no tensors (step {})", step);
    for (auto& [name, t] : batch) {
      SG_CHECK(t.defined() && t.dim() >= 1,
               "Trainer: the training batch's '{}' has no rows (a batch tensor has the batch's "
               "rows first)",
               name);
      ranks.check_splits(t.size(0), fmt::format("the training batch's '{}'", name));
      t = ranks.my_rows(t).to(device);
    }
    return batch;
  }

  // The task's input files as the run read them; on --resume, the same contents or an error.
  // Each input file's digest, for a resume to compare; with several ranks, compared between them
  // now (every rank reads its own copy: ranks given other data trained on a mix, unnoticed).
  void digest_inputs() {
    std::vector<std::pair<std::string, std::string>> contents;
    for (const NamedPath& input : task.input_files()) {
      std::ifstream in(input.path, std::ios::binary);
      SG_CHECK(in.good(), "{}: cannot read {}", input.flag, input.path);
      const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      input_digests[input.flag] = fmt::format("{:016x}", data::fnv1a64(bytes));
      contents.emplace_back(input.flag, fmt::format("a file of {} bytes, digest {}", bytes.size(),
                                                    input_digests[input.flag].get<std::string>()));
    }
    if (ranks.world_size() > 1 && !contents.empty())
      check_same_settings_on_every_rank(std::move(contents), "the training loop's inputs");
  }
  void check_same_inputs(const Checkpoint& last) const {
    const auto saved = last.metadata.find("input_files");
    if (saved == last.metadata.end()) return;  // a checkpoint from before the loop kept them
    const nlohmann::json was = nlohmann::json::parse(saved->second, nullptr, false);
    SG_CHECK(was.is_object(), "{}: checkpoint metadata 'input_files' is not a JSON object",
             last.path);
    for (const NamedPath& input : task.input_files()) {
      SG_CHECK(!was.contains(input.flag) || was.at(input.flag) == input_digests.at(input.flag),
               "--resume: {} {} is not the file the run was trained on (its contents differ); "
               "give that file, or start a new run",
               input.flag, input.path);
    }
  }

  // One step: the next batch on the device, then the step there (as a graph's replay with
  // cuda_graph). Its loss stays on the device until sync().
  void train_step() {
    const Tensor stats = graphed(next_batch());
    pending.push_back({step, trainer.optimizer_.lr(), stats});
  }

  // The device's part of a step: the task's loss (under autocast with bf16), backward outside
  // autocast (each product remembers its precision), the update, the moving average; returns
  // [loss] or [loss, right, counted] on the device. Nothing is read back (a graph captures it).
  Tensor device_step(const Batch& batch) {
    trainer.optimizer_.zero_grad();  // set_to_none first: last step's gradients are freed
    StepOutput out;
    {
      const AutocastGuard autocast(kBFloat16, o.bf16);
      out = task.training_step(batch);
    }
    out.loss.backward();
    ranks.finish_gradient_sync();  // every gradient the mean over the ranks (alone: nothing)
    trainer.optimizer_.step();
    if (trainer.ema_) trainer.ema_->update(model);
    const NoGradGuard no_grad;
    std::vector<Tensor> stats{out.loss.detach().to(kFloat64).reshape({1})};
    if (out.right.defined()) {
      stats.push_back(out.right.to(kFloat64).reshape({1}));
      stats.push_back(out.counted.to(kFloat64).reshape({1}));
    }
    return cat(stats);
  }

  // Reads the pending steps' losses back in one copy; a diverged run stops here, before a broken
  // model is evaluated or saved.
  void sync() {
    if (pending.empty()) return;
    std::vector<Tensor> rows;
    for (const PendingStep& p : pending) rows.push_back(p.stats);
    // With several ranks, the mean over them (collective: every rank syncs at the same steps).
    const std::vector<double> values = ranks.mean_over_ranks(cat(rows)).to_vector<double>();
    const double window_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - window_start).count();
    size_t at = 0;
    for (const PendingStep& p : pending) {
      const int64_t width = p.stats.size(0);
      const double loss = values[at];
      const double accuracy =
          width == 3 ? values[at + 1] / std::max(1.0, values[at + 2]) : std::nan("");
      at += static_cast<size_t>(width);
      SG_CHECK(std::isfinite(loss), "step {}: the training loss is {}; training stopped ({}{})",
               p.step, loss, o.divergence_advice.empty() ? "" : o.divergence_advice + ", or ",
               "resume from the last checkpoint");
      history.losses.push_back(loss);
      step_ms.push_back(window_ms / static_cast<double>(pending.size()));
      if (progress) progress->update({p.step, loss, accuracy, p.lr});
    }
    pending.clear();
  }

  bool better(const Metrics& metrics) const {
    const auto it = metrics.find(o.monitor);
    SG_CHECK(it != metrics.end(), "Trainer: the evaluation has no metric '{}' (the monitor)",
             o.monitor);
    if (best_step == 0) return true;
    SG_CHECK(best.contains(o.monitor),
             "Trainer: the run's best evaluation (step {}) has no metric '{}' (the monitor)",
             best_step, o.monitor);
    const double was = best.at(o.monitor);
    return o.maximize ? it->second >= was : it->second <= was;
  }

  void evaluate() {
    Metrics metrics;
    with_evaluated_weights([&] { metrics = task.evaluate(); });
    model.train();
    const bool is_best = better(metrics);
    Metrics logged = metrics;
    logged["train_seconds"] = elapsed();
    history.add_evaluation(step, logged);
    if (is_best) {
      best = metrics;
      best_step = step;
      with_evaluated_weights([&] { save_model(run.best(), evaluated_weights()); });
    }
    if (progress) {
      progress->message(fmt::format("step {:>6}  {}{}", step, task.describe(metrics),
                                    is_best ? "  (best so far: saved)" : ""));
    }
    nlohmann::json line{{"step", step},
                        {"loss", history.losses.empty() ? 0.0 : history.losses.back()},
                        {"lr", trainer.optimizer_.lr()}};
    for (const auto& [name, value] : metrics) line[name] = value;
    append_json_line(o.log_jsonl, line, "--log-jsonl");
    task.on_evaluation(step, metrics, is_best);
  }

  // The mean of the newest step checkpoints, evaluated as the others were: averaged.safetensors,
  // and model.safetensors if it is the best. The model is lent for it and gets its own weights
  // back; nothing draws from the generator, so a finished run resumed later goes on unchanged.
  void average_newest() {
    std::vector<std::string> paths;
    averaged_steps.clear();
    for (const auto& [saved_step, path] : run.newest_step_checkpoints(o.average_last)) {
      averaged_steps.push_back(saved_step);
      paths.push_back(path);
    }
    if (paths.empty()) return;
    nn::NamedTensors trained;
    for (const auto& [name, t] : model.state_dict()) trained.emplace_back(name, t.clone());
    nn::load(model, average_checkpoints(paths), fmt::format("the mean of {}", paths.size()));
    averaged = task.evaluate();
    model.train();
    const bool is_best = better(averaged);
    if (is_best) best = averaged, best_step = step;
    save_model(run.averaged(), "average");
    if (is_best) save_model(run.best(), "average");
    nn::load(model, trained, "the trained weights");
    if (progress) {
      progress->message(fmt::format("mean of the checkpoints at steps {}: {}{}",
                                    fmt::join(averaged_steps, ", "), task.describe(averaged),
                                    is_best ? "  (the best: model.safetensors)" : ""));
    }
  }

  void after_step(int64_t end) {
    const bool eval_now = step % o.eval_every == 0 || step == o.steps;
    const bool checkpoint_now = o.checkpoint_every > 0 && step % o.checkpoint_every == 0;
    // Read back before anything that needs the values: an evaluation, a checkpoint, the end.
    if (static_cast<int64_t>(pending.size()) >= o.sync_every || eval_now || checkpoint_now ||
        step == end) {
      sync();
    }
    if (eval_now && ranks.writes()) evaluate();
    if (o.checkpoint_every > 0 && (checkpoint_now || step == o.steps)) save_step();
    if (checkpoint_now) save_last();
    trainer.schedule_.step();  // the lr of the next update
  }

  FitResult fit() {
    // Before the run, not after it: an output that cannot be written, or that would replace a
    // file the run reads or keeps, is an error now.
    std::vector<std::string> outputs = task.output_files();
    outputs.push_back("loss.svg");
    check_run_outputs(run.path(), o.metrics_json, o.log_jsonl, task.input_files(), outputs);
    digest_inputs();
    if (ranks.writes()) lock.emplace(run.lock(o.resume));
    run.prepare(o.resume, o.overwrite, outputs);
    if (o.resume) {
      resume();
      check_resumable_to(run.path(), step, o.steps);
    } else {
      ranks.start_dropout_streams(dropout_seed, /*resumed=*/false, 0, {}, /*has_dropout=*/true);
    }
    if (!o.quiet && ranks.writes()) {
      const std::string note =
          o.bf16 ? bfloat16_speed_note(model.parameters().front().device()) : "";
      if (!note.empty()) fmt::print(stderr, "{}\n", note);
      progress.emplace(
          ProgressOptions{.first_step = step,
                          .total_steps = o.steps,
                          .interactive = Progress::stderr_is_terminal(),
                          .print_every = o.print_every > 0 ? o.print_every : o.eval_every});
    }
    const int64_t end = o.stop_after > 0 ? std::min(o.stop_after, o.steps) : o.steps;
    if (o.resume && step >= end && !o.quiet && ranks.writes()) {
      fmt::print(stderr, "the run is at step {} already, --steps {}{}: nothing to train\n", step,
                 o.steps, o.stop_after > 0 ? fmt::format(" --stop-after {}", o.stop_after) : "");
    }
    model.train();
    while (step < end) {
      if (pending.empty()) window_start = Clock::now();
      ++step;
      train_step();
      after_step(end);
    }
    if (progress) progress->finish();
    const double train_seconds = seconds_since(start);
    if (o.average_last > 0 && step == o.steps && ranks.writes()) average_newest();
    save_last();
    FitResult r = result(train_seconds);
    if (!ranks.writes()) return r;
    nn::write_file_atomically(run.path() + "/loss.svg", loss_chart(history.losses));
    task.on_train_end(history);
    r.summary = fit_summary(r, task, o);
    write_json_file(o.metrics_json, fit_result_json(r, task, o));
    return r;
  }

  FitResult result(double train_seconds) {
    FitResult r;
    r.steps = step;
    r.world_size = ranks.world_size();
    r.gradient_bytes = ranks.gradient_bytes();
    r.optimizer_state_bytes = ranks.optimizer_state_bytes(trainer.optimizer_);  // collective
    r.train_seconds = train_seconds;
    if (!step_ms.empty()) {
      const auto middle = step_ms.begin() + static_cast<std::ptrdiff_t>(step_ms.size() / 2);
      std::nth_element(step_ms.begin(), middle, step_ms.end());
      r.median_ms_per_step = *middle;
    }
    r.history = history;
    r.best_step = best_step;
    r.best = best;
    r.averaged_steps = averaged_steps;
    r.averaged = averaged;
    return r;
  }
};

Trainer::Trainer(nn::Module& model, optim::Optimizer& optimizer, optim::LRScheduler& schedule,
                 TrainerOptions options, DataParallelRun* ranks)
    : model_(model),
      optimizer_(optimizer),
      schedule_(schedule),
      options_(std::move(options)),
      alone_(ranks ? nullptr : std::make_unique<DataParallelRun>(nullptr, DataParallelOptions{})),
      ranks_(ranks ? ranks : alone_.get()) {
  options_.validate();
  SG_CHECK(!model_.parameters().empty(), "Trainer: the model has no parameters");
  SG_CHECK(!options_.cuda_graph || ranks_->world_size() == 1,
           "--cuda-graph with --distributed is not supported: the gradient all-reduce runs "
           "outside the graph; train each rank eagerly");
  // The moving average starts as a copy of the initial weights (or is read back on resume).
  if (options_.ema_decay > 0) {
    ema_ = std::make_unique<optim::ExponentialMovingAverage>(
        model_, optim::ExponentialMovingAverageOptions{.decay = options_.ema_decay});
  }
}

Trainer::~Trainer() = default;

FitResult Trainer::fit(TrainingTask& task) {
  std::optional<DeterministicAlgorithmsGuard> deterministic;
  if (options_.deterministic) deterministic.emplace(true);
  Loop loop(*this, task);
  return loop.fit();
}

}  // namespace sg::train
