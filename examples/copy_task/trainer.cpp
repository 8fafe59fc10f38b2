#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "autograd/autocast.h"
#include "autograd/cuda_graph.h"
#include "decoding.h"
#include "graphed_step.h"
#include "nn/atomic_file.h"
#include "run_state.h"
#include "train/data_parallel_run.h"
#include "train/line_chart.h"
#include "train/metrics_log.h"
#include "train/mixed_precision.h"
#include "train/output_paths.h"
#include "train/progress.h"

namespace copy_task {

namespace fs = std::filesystem;
using sg::Tensor;

namespace {

// Data and evaluation streams get seeds of their own, derived from the run's seed, so that
// held-out sequences never come from the training stream.
constexpr uint64_t kTrainStream = 0x1000, kEvalStream = 0x2000, kFinalStream = 0x3000;

// What a run draws into its directory besides checkpoints.
const std::vector<std::string> kRunCharts = {"loss.svg", "accuracy.svg", "cross_attention.svg",
                                             "self_attention.svg"};

// Teacher forcing: the decoder sees tgt[:, :-1] and learns to predict tgt[:, 1:].
struct StepResult {
  Tensor loss;
  Tensor counts;  // [right, real]: the token accuracy's two counts, still on the model's device
};

// "cpu", "cuda" or "cuda:N"; a clear error when the GPU cannot be used.
sg::Device parse_device(const std::string& name) {
  if (name == "cpu") return sg::kCPU;
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    const std::string index = name == "cuda" ? "0" : name.substr(5);
    SG_CHECK(!index.empty() && index.find_first_not_of("0123456789") == std::string::npos,
             "--device {}: expected cuda or cuda:N", name);
    SG_CHECK(sg::cuda_available(), "--device {}: {}", name, sg::cuda_unavailable_reason());
    return sg::Device::cuda(std::stoi(index));
  }
  SG_FAIL("--device {}: unknown device (expected cpu, cuda or cuda:N)", name);
}

// The device a model's parameters live on (Module::to moves them all together).
sg::Device device_of(sg::nn::Transformer& model) { return model.parameters().front().device(); }

// The token tensors of a batch (made on the host) on `device`; lengths stay on the host, where
// evaluation reads them.
Batch on_device(Batch batch, sg::Device device) {
  batch.src = batch.src.to(device);
  batch.tgt = batch.tgt.to(device);
  return batch;
}

// The tokens a batch's loss counts: every target after the start symbol, up to each length.
int64_t target_tokens(const Batch& batch) {
  int64_t tokens = 0;
  for (int64_t length : batch.lengths.to_vector<int64_t>()) tokens += length - 1;
  return tokens;
}

StepResult forward_batch(sg::nn::Transformer& model, const Batch& batch, const Config& config,
                         const sg::train::DataParallelRun& ranks) {
  const int64_t L = batch.tgt.size(1);
  Tensor decoder_in = batch.tgt.narrow(1, 0, L - 1);
  Tensor labels = batch.tgt.narrow(1, 1, L - 1).contiguous();
  Tensor logits = model.forward(batch.src, decoder_in);  // [B, L-1, V]
  Tensor flat_logits = logits.reshape({-1, config.vocab});
  Tensor flat_labels = labels.reshape({-1});
  // The mean over the batch's real tokens. With several ranks, each rank's rows may hold a
  // different number of them (padding): the mean over all ranks' tokens, not a mean of means.
  Tensor loss = ranks.world_size() == 1
                    ? sg::nn::cross_entropy(flat_logits, flat_labels, kPad, config.label_smoothing)
                    : ranks.per_token_mean(sg::nn::cross_entropy(flat_logits, flat_labels, kPad,
                                                                 config.label_smoothing, "sum"),
                                           target_tokens(batch));
  sg::NoGradGuard no_grad;
  Tensor real = flat_labels.ne(static_cast<double>(kPad));
  Tensor right = sg::logical_and(flat_logits.argmax(-1).eq(flat_labels), real);
  // No read back here: on a GPU every read makes the host wait. The trainer reads the counts
  // later, with the loss, batched over several steps (see --sync-every).
  return {loss, sg::stack({right.sum(), real.sum()})};
}

void write_plots(const sg::train::History& h, const std::string& dir) {
  sg::nn::write_file_atomically(dir + "/loss.svg", sg::train::loss_chart(h.losses));
  sg::nn::write_file_atomically(
      dir + "/accuracy.svg",
      sg::train::evaluation_chart(h, "Held-out accuracy (greedy decoding)", "fraction",
                                  {{"exact", "exact match"}, {"token_acc", "token accuracy"}}));
}

}  // namespace

nlohmann::json metrics_json(const Config& config, const TrainSummary& s) {
  return {{"config", config.to_map()},
          {"steps", s.steps},
          {"final_loss", s.final_loss},
          {"exact_match", s.final_eval.exact_match},
          {"token_accuracy", s.final_eval.token_accuracy},
          {"eval_samples", s.final_eval.samples},
          {"train_seconds", s.train_seconds},
          {"median_ms_per_step", s.median_ms_per_step},
          {"world_size", s.world_size},
          {"precision", sg::train::precision_name(s.bf16)},
          {"gradient_bytes_per_step", s.gradient_bytes},
          {"optimizer_state_bytes_per_rank", s.optimizer_state_bytes},
          {"saved_model", "best held-out evaluation"},
          {"best_step", s.best_step},
          {"first_perfect_step",
           s.first_perfect_step ? nlohmann::json(*s.first_perfect_step) : nlohmann::json()}};
}

EvalResult evaluate(sg::nn::Transformer& model, TaskGenerator& gen, int64_t samples,
                    int64_t batch) {
  sg::NoGradGuard no_grad;
  bool was_training = model.is_training();
  model.eval();
  EvalResult r;
  int64_t right_tokens = 0, total_tokens = 0, right_seqs = 0;
  for (int64_t done = 0; done < samples; done += batch) {
    int64_t n = std::min(batch, samples - done);
    Batch b = gen.next(n);
    const int64_t L = b.tgt.size(1);
    std::vector<std::vector<int64_t>> out =
        greedy_decode(model, b.src.to(device_of(model)), L, /*use_cache=*/true);
    std::vector<int64_t> tgt = b.tgt.to_vector<int64_t>();
    std::vector<int64_t> lengths = b.lengths.to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      bool all = true;
      for (int64_t t = 1; t < lengths[i]; ++t) {  // position 0 is the given start symbol
        bool ok = out[i][t] == tgt[i * L + t];
        right_tokens += ok;
        all = all && ok;
      }
      total_tokens += lengths[i] - 1;
      right_seqs += all;
    }
  }
  model.train(was_training);
  r.samples = samples;
  r.exact_match = static_cast<double>(right_seqs) / static_cast<double>(samples);
  r.token_accuracy = static_cast<double>(right_tokens) / std::max<double>(1.0, total_tokens);
  return r;
}

LoadedModel load_checkpoint(const std::string& path) {
  CheckpointFile file = read_checkpoint(path);
  return {file.config,
          sg::train::load_model<sg::nn::Transformer>(file.checkpoint, file.config.model_options())};
}

void save_initial_checkpoint(const std::string& path, const Config& config) {
  SG_CHECK(!fs::exists(path),
           "capture --init: {} already exists; --init writes a fresh, untrained model there, so it "
           "must be a new file (a trained model is never replaced)",
           path);
  config.validate();
  sg::manual_seed(config.seed);  // as train() does before building its model
  sg::nn::Transformer model(config.model_options());
  sg::train::save_checkpoint(path, model, nullptr, metadata_for(config, RunState{}));
}

TrainSummary train(const Config& config, const TrainOptions& options) {
  config.validate();
  options.validate();
  // Before the run, not after it: an output that cannot be written, or that would replace a file
  // of the run, is an error now.
  sg::train::check_run_outputs(options.out_dir, options.metrics_json, options.log_jsonl, {},
                               kRunCharts);
  if (options.parallel.distributed) {  // before anything else: ranks started differently stop here
    sg::train::join_distributed_job();
    check_same_settings_on_every_rank(config, options);
  }
  // --distributed --device cuda: one GPU per rank, the rank's index on its machine.
  const sg::Device device =
      options.parallel.distributed && options.device == "cuda"
          ? parse_device(fmt::format("cuda:{}", sg::train::distributed_local_rank()))
          : parse_device(options.device);
  // Steps between reads of the loss and accuracy: 1 on the CPU (reading costs nothing there), 25
  // on a GPU (the host queues 25 steps ahead without waiting).
  const int64_t sync_every = options.sync_every.value_or(device.is_cuda() ? 25 : 1);
  const sg::train::RunDirectory run(options.out_dir);
  std::optional<sg::train::RunLock> lock;  // rank 0 writes the run's files
  if (!options.parallel.distributed || sg::train::distributed_rank() == 0)
    lock.emplace(run.lock(options.resume));
  run.prepare(options.resume, options.overwrite, kRunCharts);

  sg::manual_seed(config.seed);
  auto model = std::make_shared<sg::nn::Transformer>(config.model_options());
  model->to(device);  // before the optimizer: its state is made next to the parameters
  // Adam with lr 1: the Noam schedule below gives the rate itself (it scales this base lr). With
  // --zero1, sharded over the ranks.
  std::unique_ptr<sg::optim::Optimizer> optimizer = sg::train::make_adam(
      model->parameters(), {.lr = 1.0, .betas = {config.beta1, config.beta2}, .eps = config.eps},
      options.zero1);
  TaskGenerator data(config.task_kind(), config.vocab, config.min_len, config.length,
                     config.seed ^ kTrainStream);
  TaskGenerator held_out(config.task_kind(), config.vocab, config.min_len, config.length,
                         config.seed ^ kEvalStream);
  RunState state;
  state.bf16 = options.bf16;
  if (options.resume) {
    state = resume_from(run, config, options.bf16, *model, *optimizer);
    sg::train::check_resumable_to(run.path(), state.step, config.loop.steps);
    // A killed run's log lines after its checkpoint go: the resumed run writes them again.
    if (sg::train::distributed_rank() == 0)
      sg::train::drop_json_lines_after(options.log_jsonl, state.step, "--log-jsonl");
    data.set_state(state.data_rng);
    held_out.set_state(state.eval_rng);
  }
  // The lr of the next update, from the optimizer's step count (restored by a resume).
  sg::optim::NoamLR schedule(*optimizer, config.d_model, config.warmup, config.lr_factor);
  model->train();
  // With --distributed: rank 0's parameters go to every rank, gradients are averaged in backward,
  // and each rank takes its rows of every global batch. Alone: one rank, the whole batch.
  sg::train::DataParallelRun ranks(model, options.parallel);
  ranks.check_splits(config.batch, "--batch");
  const bool writer = ranks.writes();  // the one rank that prints and writes files
  const bool quiet = options.quiet || !writer;
  const std::string note = ranks.start_dropout_streams(config.seed, options.resume, state.step,
                                                       state.dropout, config.dropout > 0);
  if (!note.empty() && !quiet) fmt::print(stderr, "{}\n", note);
  const std::string bf16_note = options.bf16 ? sg::train::bfloat16_speed_note(device) : "";
  if (!bf16_note.empty() && !quiet) fmt::print(stderr, "{}\n", bf16_note);

  sg::train::Progress progress({.first_step = state.step,
                                .total_steps = config.loop.steps,
                                .interactive = !quiet && sg::train::Progress::stderr_is_terminal(),
                                .print_every = config.loop.eval_every});
  std::vector<double> step_ms;
  double final_loss = state.history.losses.empty() ? 0 : state.history.losses.back();
  auto save_last = [&] {
    state.data_rng = data.state();
    state.eval_rng = held_out.state();
    state.dropout = ranks.dropout_streams();   // every rank's dropout stream, for rank 0 to save
    ranks.gather_optimizer_state(*optimizer);  // --zero1: the shards, gathered on rank 0
    if (writer) run.save_last(*model, *optimizer, metadata_for(config, state));
  };

  // Each step's loss and accuracy counts stay on the device as [loss, right, real] (float64:
  // exact for a float32 loss and for counts below 2^53) until sync() reads all pending steps back
  // in one copy. On a GPU a read makes the host wait for everything queued, so reading every step
  // would serialise launching and running; every sync_every steps, the host runs ahead in between.
  struct PendingStep {
    int64_t step;
    double lr;
    Tensor stats;
  };
  std::vector<PendingStep> pending;
  // Timing: without a read, a step's own wall time on a GPU measures only the queueing of its
  // kernels. So a step's time is the wall time of its sync window (from the start of the window's
  // first step to the end of the read) divided by the steps in the window; with sync_every 1 it
  // is the step's own time, read included, as before.
  auto window_start = std::chrono::steady_clock::now();
  auto sync = [&] {
    if (pending.empty()) return;
    std::vector<Tensor> stats;
    for (const PendingStep& p : pending) stats.push_back(p.stats);
    // The one read back; with --distributed, the mean over ranks (each rank's shard is the same
    // size, so the mean of their losses and counts is that of the global batch).
    std::vector<double> values = ranks.mean_over_ranks(sg::stack(stats)).to_vector<double>();
    const double window_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - window_start)
            .count();
    for (size_t i = 0; i < pending.size(); ++i) {
      final_loss = values[3 * i];
      // A diverged run stops here, before a broken model is evaluated or saved.
      SG_CHECK(std::isfinite(final_loss),
               "step {}: the training loss is {}; training stopped (lower --lr-factor or raise "
               "--warmup, or resume from the last checkpoint)",
               pending[i].step, final_loss);
      double token_accuracy = values[3 * i + 1] / std::max(1.0, values[3 * i + 2]);
      step_ms.push_back(window_ms / static_cast<double>(pending.size()));
      state.history.losses.push_back(final_loss);
      if (!quiet) progress.update({pending[i].step, final_loss, token_accuracy, pending[i].lr});
    }
    pending.clear();
  };

  // One training step on `batch`; returns [loss, right, real] on the device. With --cuda-graph,
  // GraphedStep runs it eagerly once, then captures it and replays it (graphed_step.h).
  auto run_step = [&](const Batch& batch) {
    // First: set_to_none, so last step's gradients are freed before this forward (lower peak).
    optimizer->zero_grad();
    StepResult r = [&] {
      const sg::AutocastGuard autocast(sg::kBFloat16, options.bf16);  // the forward and the loss
      return forward_batch(*model, batch, config, ranks);
    }();
    r.loss.backward();  // outside autocast, as PyTorch's recipe: each op remembers its precision
    ranks.finish_gradient_sync();
    optimizer->step();
    sg::NoGradGuard no_grad;
    return sg::cat({r.loss.detach().to(sg::kFloat64).reshape({1}), r.counts.to(sg::kFloat64)});
  };
  if (options.tf32) sg::cuda::set_allow_tf32(true);
  GraphedStep step(run_step, options.cuda_graph, device);

  auto t_start = std::chrono::steady_clock::now();
  while (state.step < config.loop.steps) {
    if (pending.empty()) window_start = std::chrono::steady_clock::now();
    ++state.step;
    const Batch global = data.next(config.batch);
    const Batch mine{ranks.my_rows(global.src), ranks.my_rows(global.tgt),
                     ranks.my_rows(global.lengths)};
    const Tensor stats = step(on_device(mine, device));
    pending.push_back({state.step, optimizer->lr(), stats});
    const bool eval_now =
        state.step % config.loop.eval_every == 0 || state.step == config.loop.steps;
    const bool checkpoint_now =
        config.loop.checkpoint_every > 0 && state.step % config.loop.checkpoint_every == 0;
    // Read back before anything that needs the values: an evaluation (log line, checkpoint
    // history), a checkpoint, the end of training.
    if (static_cast<int64_t>(pending.size()) >= sync_every || eval_now || checkpoint_now) sync();

    if (eval_now && writer) {
      EvalResult e = evaluate(*model, held_out, config.eval_samples);
      state.history.add_evaluation(state.step,
                                   {{"exact", e.exact_match}, {"token_acc", e.token_accuracy}});
      if (e.exact_match >= 1.0 && !state.first_perfect) state.first_perfect = state.step;
      bool best = e.exact_match >= state.best_exact;
      if (best) {
        state.best_exact = e.exact_match;
        state.best_step = state.step;
      }
      if (!quiet) {
        progress.message(fmt::format(
            "step {:>5}  held-out exact match {:6.2f}%  token accuracy {:6.2f}%{}", state.step,
            100 * e.exact_match, 100 * e.token_accuracy, best ? "  (best so far: saved)" : ""));
      }
      sg::train::append_json_line(options.log_jsonl,
                                  {{"step", state.step},
                                   {"loss", final_loss},
                                   {"exact_match", e.exact_match},
                                   {"token_accuracy", e.token_accuracy},
                                   {"lr", optimizer->lr()}},
                                  "--log-jsonl");
      if (best) {
        const auto bad = sg::train::first_non_finite(model->state_dict());
        SG_CHECK(!bad, "step {}: the model's tensor '{}' holds infinities or NaNs; not saving it",
                 state.step, bad.value_or(""));
        sg::train::save_checkpoint(run.best(), *model, nullptr, metadata_for(config, state));
      }
    }
    if (checkpoint_now) save_last();
    schedule.step();  // the lr of the next update
  }
  sync();  // nothing is pending here (the last step evaluates), but never lose a step
  progress.finish();
  double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  save_last();
  TrainSummary summary;
  summary.world_size = ranks.world_size();
  summary.bf16 = options.bf16;
  summary.cuda_graph = options.cuda_graph;
  summary.gradient_bytes = ranks.gradient_bytes();
  summary.optimizer_state_bytes = ranks.optimizer_state_bytes(*optimizer);
  if (!writer) {  // the other ranks are done: rank 0 evaluates and reports
    summary.steps = state.step;
    summary.final_loss = final_loss;
    return summary;
  }
  write_plots(state.history, options.out_dir);

  summary.steps = state.step;
  summary.final_loss = final_loss;
  summary.train_seconds = train_seconds;
  if (!step_ms.empty()) {
    std::nth_element(step_ms.begin(), step_ms.begin() + step_ms.size() / 2, step_ms.end());
    summary.median_ms_per_step = step_ms[step_ms.size() / 2];
  }
  summary.first_perfect_step = state.first_perfect;
  summary.best_step = state.best_step;
  // The model the user gets is the saved one: evaluate it on fresh sequences it never saw.
  if (fs::exists(run.best())) {
    LoadedModel saved = load_checkpoint(run.best());
    saved.model->to(device);
    TaskGenerator final_gen(config.task_kind(), config.vocab, config.min_len, config.length,
                            config.seed ^ kFinalStream);
    summary.final_eval = evaluate(*saved.model, final_gen, config.final_samples);
  }
  summary.best_eval.exact_match = state.best_exact;
  sg::train::write_json_file(options.metrics_json, metrics_json(config, summary));
  return summary;
}

}  // namespace copy_task
