#include "trainer.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "autograd/cuda_graph.h"
#include "decoding.h"
#include "nn/atomic_file.h"
#include "run_state.h"
#include "train/data_parallel_run.h"
#include "train/line_chart.h"
#include "train/metadata.h"
#include "train/metrics_log.h"
#include "train/mixed_precision.h"
#include "train/output_paths.h"
#include "train/run_directory.h"
#include "train/trainer.h"

namespace copy_task {

namespace fs = std::filesystem;
using sg::Tensor;

namespace {

// Data and evaluation streams get seeds of their own, derived from the run's seed, so that
// held-out sequences never come from the training stream.
constexpr uint64_t kTrainStream = 0x1000, kEvalStream = 0x2000, kFinalStream = 0x3000;

// The charts a run draws into its directory besides the loop's loss.svg.
const std::vector<std::string> kTaskCharts = {"accuracy.svg", "cross_attention.svg",
                                              "self_attention.svg"};

// One step's loss and the token accuracy's two counts, still on the model's device.
struct StepResult {
  Tensor loss, right, real;
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

// Teacher forcing: the decoder sees tgt[:, :-1] and learns to predict tgt[:, 1:].
StepResult forward_batch(sg::nn::Transformer& model, const Tensor& src, const Tensor& tgt,
                         const Config& config, const sg::train::DataParallelRun& ranks) {
  const int64_t L = tgt.size(1);
  Tensor decoder_in = tgt.narrow(1, 0, L - 1);
  Tensor labels = tgt.narrow(1, 1, L - 1).contiguous();
  Tensor logits = model.forward(src, decoder_in);  // [B, L-1, V]
  Tensor flat_logits = logits.reshape({-1, config.vocab});
  Tensor flat_labels = labels.reshape({-1});
  Tensor real, right;
  {
    sg::NoGradGuard no_grad;
    real = flat_labels.ne(static_cast<double>(kPad));
    right = sg::logical_and(flat_logits.argmax(-1).eq(flat_labels), real);
  }
  // The mean over the batch's real tokens. With several ranks, each rank's rows may hold a
  // different number of them (padding): the mean over all ranks' tokens, not a mean of means
  // (their count read back: the ranks add theirs on the host).
  Tensor loss = ranks.world_size() == 1
                    ? sg::nn::cross_entropy(flat_logits, flat_labels, kPad, config.label_smoothing)
                    : ranks.per_token_mean(sg::nn::cross_entropy(flat_logits, flat_labels, kPad,
                                                                 config.label_smoothing, "sum"),
                                           real.sum().item<int64_t>());
  // No read back here: on a GPU every read makes the host wait. The loop reads the counts later,
  // with the loss, batched over several steps (--sync-every).
  return {loss, right.sum(), real.sum()};
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
  sg::train::save_checkpoint(path, model, nullptr, metadata_for(config));
}

namespace {

// The copy task for the library's training loop (sg::train::Trainer): batches from the task's
// generator, teacher forcing under cross-entropy, held-out exact match by greedy decoding, the
// generators' states in every checkpoint.
class CopyTask : public sg::train::TrainingTask {
 public:
  CopyTask(const Config& config, sg::nn::Transformer& model,
           const sg::train::DataParallelRun& ranks, std::string out_dir)
      : config_(config),
        model_(model),
        ranks_(ranks),
        data_(config.task_kind(), config.vocab, config.min_len, config.length,
              config.seed ^ kTrainStream),
        held_out_(config.task_kind(), config.vocab, config.min_len, config.length,
                  config.seed ^ kEvalStream),
        out_dir_(std::move(out_dir)) {}

  sg::train::Batch next_batch() override {
    const Batch batch = data_.next(config_.batch);
    return {{"src", batch.src}, {"tgt", batch.tgt}};
  }

  sg::train::StepOutput training_step(const sg::train::Batch& batch) override {
    const StepResult r = forward_batch(model_, batch.at("src"), batch.at("tgt"), config_, ranks_);
    return {r.loss, r.right, r.real};
  }

  sg::train::Metrics evaluate() override {
    const EvalResult e = copy_task::evaluate(model_, held_out_, config_.eval_samples);
    return {{"exact_match", e.exact_match}, {"token_accuracy", e.token_accuracy}};
  }

  std::string describe(const sg::train::Metrics& m) const override {
    return fmt::format("held-out exact match {:6.2f}%  token accuracy {:6.2f}%",
                       100 * m.at("exact_match"), 100 * m.at("token_accuracy"));
  }

  sg::nn::Metadata checkpoint_metadata() const override {
    sg::nn::Metadata md = metadata_for(config_);
    md["data_rng"] = std::to_string(data_.state());
    md["eval_rng"] = std::to_string(held_out_.state());
    return md;
  }

  // The saved run is this one (only the flags Config::fields() lets change may), and its data
  // streams go on where they were.
  void load_checkpoint(const sg::train::Checkpoint& last) override {
    const Config saved = config_of(last);
    sg::train::check_resume(saved.to_map(), config_.to_map(), Config::fields(), last.path);
    const sg::train::MetadataReader md(last.metadata, last.path);
    data_.set_state(md.unsigned_integer("data_rng"));
    held_out_.set_state(md.unsigned_integer("eval_rng"));
  }

  void on_train_end(const sg::train::History& history) override {
    sg::nn::write_file_atomically(
        out_dir_ + "/accuracy.svg",
        sg::train::evaluation_chart(
            history, "Held-out accuracy (greedy decoding)", "fraction",
            {{"exact_match", "exact match"}, {"token_accuracy", "token accuracy"}}));
  }
  // The accuracy chart, and the attention plots the program draws after training.
  std::vector<std::string> output_files() const override { return kTaskCharts; }

 private:
  const Config& config_;
  sg::nn::Transformer& model_;
  const sg::train::DataParallelRun& ranks_;
  TaskGenerator data_, held_out_;
  std::string out_dir_;
};

// The loop's options from the program's: the config's loop, and how this process runs it.
sg::train::TrainerOptions trainer_options(const Config& config, const TrainOptions& options,
                                          sg::Device device) {
  return {.out_dir = options.out_dir,
          .resume = options.resume,
          .overwrite = options.overwrite,
          .quiet = options.quiet,
          .steps = config.loop.steps,
          .eval_every = config.loop.eval_every,
          .checkpoint_every = config.loop.checkpoint_every,
          // 1 on the CPU (reading costs nothing there), 25 on a GPU (the host queues 25 steps
          // ahead without waiting).
          .sync_every = options.sync_every.value_or(device.is_cuda() ? 25 : 1),
          .bf16 = options.bf16,
          .cuda_graph = options.cuda_graph,
          .deterministic = options.deterministic,
          .monitor = "exact_match",
          .maximize = true,
          .divergence_advice = "lower --lr-factor or raise --warmup",
          .log_jsonl = options.log_jsonl};
}

// The first evaluation at 100% exact match, if any.
std::optional<int64_t> first_perfect(const sg::train::History& history) {
  const auto exact = history.evals.find("exact_match");
  if (exact == history.evals.end()) return std::nullopt;
  for (size_t i = 0; i < exact->second.size(); ++i) {
    if (exact->second[i] >= 1.0) return history.eval_steps[i];
  }
  return std::nullopt;
}

}  // namespace

TrainSummary train(const Config& config, const TrainOptions& options) {
  config.validate();
  options.validate();
  // Before the run, not after it: an output that cannot be written, or that would replace a file
  // of the run, is an error now (the loop checks its own outputs; this program writes the
  // metrics).
  std::vector<std::string> charts = kTaskCharts;
  charts.push_back("loss.svg");
  sg::train::check_run_outputs(options.out_dir, options.metrics_json, options.log_jsonl, {},
                               charts);
  if (options.parallel.distributed) {  // before anything else: ranks started differently stop here
    sg::train::join_distributed_job();
    check_same_settings_on_every_rank(config, options);
  }
  // --distributed --device cuda: one GPU per rank, the rank's index on its machine.
  const sg::Device device =
      options.parallel.distributed && options.device == "cuda"
          ? parse_device(fmt::format("cuda:{}", sg::train::distributed_local_rank()))
          : parse_device(options.device);
  if (options.tf32) sg::cuda::set_allow_tf32(true);
  sg::manual_seed(config.seed);
  auto model = std::make_shared<sg::nn::Transformer>(config.model_options());
  model->to(device);  // before the optimizer: its state is made next to the parameters
  // Adam with lr 1: the Noam schedule gives the rate itself (it scales this base lr). With
  // --zero1, sharded over the ranks.
  std::unique_ptr<sg::optim::Optimizer> optimizer = sg::train::make_adam(
      model->parameters(), {.lr = 1.0, .betas = {config.beta1, config.beta2}, .eps = config.eps},
      options.zero1);
  sg::optim::NoamLR schedule(*optimizer, config.d_model, config.warmup, config.lr_factor);
  // With --distributed: rank 0's parameters go to every rank, gradients are averaged in backward,
  // and each rank takes its rows of every global batch. Alone: one rank, the whole batch.
  sg::train::DataParallelRun ranks(model, options.parallel);
  ranks.check_splits(config.batch, "--batch");
  CopyTask task(config, *model, ranks, options.out_dir);
  sg::train::Trainer trainer(*model, *optimizer, schedule, trainer_options(config, options, device),
                             &ranks);
  const sg::train::FitResult fit = trainer.fit(task);

  TrainSummary summary;
  summary.steps = fit.steps;
  summary.final_loss = fit.history.losses.empty() ? 0 : fit.history.losses.back();
  summary.world_size = fit.world_size;
  summary.bf16 = options.bf16;
  summary.cuda_graph = options.cuda_graph;
  summary.gradient_bytes = fit.gradient_bytes;
  summary.optimizer_state_bytes = fit.optimizer_state_bytes;
  if (!ranks.writes()) return summary;  // the other ranks are done: rank 0 evaluates and reports
  summary.train_seconds = fit.train_seconds;
  summary.median_ms_per_step = fit.median_ms_per_step;
  summary.first_perfect_step = first_perfect(fit.history);
  summary.best_step = fit.best_step;
  summary.best_eval.exact_match = fit.best.contains("exact_match") ? fit.best.at("exact_match") : 0;
  // The model the user gets is the saved one: evaluate it on fresh sequences it never saw.
  const sg::train::RunDirectory run(options.out_dir);
  if (fs::exists(run.best())) {
    LoadedModel saved = load_checkpoint(run.best());
    saved.model->to(device);
    TaskGenerator final_gen(config.task_kind(), config.vocab, config.min_len, config.length,
                            config.seed ^ kFinalStream);
    summary.final_eval = evaluate(*saved.model, final_gen, config.final_samples);
  }
  sg::train::write_json_file(options.metrics_json, metrics_json(config, summary));
  return summary;
}

}  // namespace copy_task
