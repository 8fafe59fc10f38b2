// Training and evaluation of the copy-task Transformer, on the library's training loop
// (sg::train::Trainer, train/trainer.h).
//
// What is the task's own: batches from its generator, teacher forcing (the decoder reads
// tgt[:, :-1] and must predict tgt[:, 1:]) under cross-entropy ignoring padding, Adam with the
// Noam schedule (sg::optim::NoamLR), and as the evaluation the held-out exact match of greedy
// decoding, which picks model.safetensors (post-LN training is spiky, so the last step is not
// always the best one). The loop does the rest: the run directory, last.safetensors for --resume,
// reading the loss back every sync_every steps, the divergence guard, the CUDA-graph step, data
// parallelism, progress and logs. After it, the saved model is evaluated on fresh sequences.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "nn/nn.h"
#include "train/data_parallel_run.h"

namespace copy_task {

struct EvalResult {
  double exact_match = 0;     // fraction of sequences decoded entirely right
  double token_accuracy = 0;  // fraction of non-pad target tokens right
  int64_t samples = 0;
};

// Greedy-decodes `samples` fresh sequences from `gen` and compares them with their targets.
EvalResult evaluate(sg::nn::Transformer& model, TaskGenerator& gen, int64_t samples,
                    int64_t batch = 100);

struct TrainOptions {
  std::string out_dir = "runs/copy";
  bool resume = false;
  bool overwrite = false;  // replace the run in out_dir; without it (or resume) an existing run is
                           // refused
  bool quiet = false;
  std::string metrics_json, log_jsonl;
  std::string device = "cpu";
  // Steps between reads of the loss and token accuracy back to the host (one batched read); unset:
  // 1 on the CPU, 25 on CUDA. Every evaluation, checkpoint and the end of training read first, so
  // history, progress, metrics and checkpoints hold the same values whatever it is.
  std::optional<int64_t> sync_every;
  // Data-parallel training over the ranks mpirun started (--distributed, --bucket-mb;
  // sg::train::DataParallelRun, docs/15-distributed.md): each rank computes config.batch /
  // world_size rows of every batch, gradients are averaged in buckets during backward; only rank 0
  // evaluates, prints and writes files.
  sg::train::DataParallelOptions parallel;
  // With distributed: ZeRO-1, each rank keeps only its shard of Adam's state (1/N of it).
  bool zero1 = false;
  // Mixed precision: each step's forward and loss under sg::AutocastGuard(sg::kBFloat16), so the
  // products read bfloat16 operands and sum in float32; the weights, gradients and Adam stay
  // float32 (docs/13b-mixed-precision.md). Evaluation and decoding stay float32.
  bool bf16 = false;
  // On CUDA: the step (forward, loss, backward, Adam) captured as one CUDA graph after the first
  // eager step and replayed, each batch copied into the graph's input tensors first
  // (autograd/cuda_graph.h, docs/14-gpu.md): the eager steps' results (their bits with
  // --deterministic).
  bool cuda_graph = false;
  // Sums in a fixed order where a GPU adds in any order (sg::use_deterministic_algorithms).
  bool deterministic = false;
  // On CUDA: float32 products on TF32 tensor cores (sg::cuda::set_allow_tf32).
  bool tf32 = false;

  // Clear errors for --bucket-mb <= 0, --zero1 without --distributed, --cuda-graph or --tf32 off
  // CUDA; the loop checks the rest (--sync-every, --resume with --overwrite, --cuda-graph with
  // --distributed).
  void validate() const;
};

struct TrainSummary {
  int64_t steps = 0;
  double final_loss = 0;
  double train_seconds = 0, median_ms_per_step = 0;
  int world_size = 1;          // ranks that trained (1 without --distributed)
  bool bf16 = false;           // the steps ran under autocast (--bf16)
  bool cuda_graph = false;     // the steps after the first were replays of one CUDA graph
  int64_t gradient_bytes = 0;  // all-reduced per step by each rank (0 without --distributed)
  // Bytes of optimizer state (Adam's moments) each rank holds at the end, in rank order.
  std::vector<int64_t> optimizer_state_bytes;
  std::optional<int64_t> first_perfect_step;  // first evaluation with 100% exact match
  int64_t best_step = 0;
  EvalResult best_eval, final_eval;  // final_eval: the saved model on final_samples sequences
};

// Trains, writes checkpoints and pictures to options.out_dir, and (if options.metrics_json) the
// final metrics as one JSON object (see metrics_json).
TrainSummary train(const Config& config, const TrainOptions& options);

// With --distributed: refuses, on every rank alike, ranks started with different settings (the
// config and the options that decide what the ranks do together), naming each flag and each
// rank's value (sg::train::check_same_settings_on_every_rank).
void check_same_settings_on_every_rank(const Config& config, const TrainOptions& options);

// {"config", "steps", "final_loss", "exact_match" (0..1, the saved model on final_samples fresh
//  sequences), "token_accuracy", "train_seconds", "median_ms_per_step", "best_step", ...}
nlohmann::json metrics_json(const Config& config, const TrainSummary& summary);

// Loads a checkpoint written by train() (model + config); throws a clear error otherwise.
struct LoadedModel {
  Config config;
  std::shared_ptr<sg::nn::Transformer> model;
};
LoadedModel load_checkpoint(const std::string& path);

// Writes the model `train` would start from (seeded with config.seed) as a step-0 checkpoint:
// eval, decode and capture read it like any other. Refuses a path that exists (a trained model
// must never be replaced by an untrained one).
void save_initial_checkpoint(const std::string& path, const Config& config);

}  // namespace copy_task
