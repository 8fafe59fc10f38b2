// --8<-- [start:the_loop_and_why]
// The training loop every task shares. A learner's first loop is five lines:
//
//   for (int64_t step = 1; step <= steps; ++step) {
//     optimizer.zero_grad();
//     Tensor loss = loss_of(model, next_batch());
//     loss.backward();
//     optimizer.step();
//   }
//
// A run that people rely on needs more, and each piece protects against something:
//   - a run directory (run_directory.h) that a second run does not overwrite by mistake;
//   - last.safetensors every so many steps, holding everything an exact --resume needs (weights,
//     optimizer, moving average, the dropout generator, the data's position, the history), so a
//     killed process loses minutes, not the run;
//   - an evaluation every eval_every steps, and the best model by one metric kept as
//     model.safetensors (a spiky run's last step is not always its best);
//   - a guard that stops a diverged run (a non-finite loss) before a broken model is evaluated or
//     saved, and never writes a checkpoint holding NaNs;
//   - the loss read back to the host only every sync_every steps (on a GPU each read makes the host
//     wait for everything queued);
//   - a moving average of the weights (Polyak averaging, optim/exponential_moving_average.h) and
//     the mean of the last checkpoints (average_checkpoints.h), evaluated like the weights;
//   - bfloat16 autocast around the forward and the loss (mixed_precision.h);
//   - on a GPU, the step as one CUDA graph (graphed_step.h): the host launches it, not each kernel;
//   - data parallelism over the ranks of an mpirun job (data_parallel_run.h): gradients averaged
//     before each update, a dropout stream per rank, rank 0 alone evaluating and writing;
//   - progress on a terminal and in a log, a JSON line per evaluation, the wall time.
//
// Trainer is that loop, written once. The task says what differs: how a batch becomes a loss, how
// the model is evaluated, and what the task keeps in a checkpoint (TrainingTask, with the names of
// PyTorch Lightning's LightningModule hooks).
// --8<-- [end:the_loop_and_why]
//
//   MyTask task(...);                         // a TrainingTask
//   sg::train::Trainer trainer(model, optimizer, schedule,
//                              {.out_dir = "runs/x", .steps = 1000, .eval_every = 100,
//                               .monitor = "exact_match", .maximize = true});
//   sg::train::FitResult result = trainer.fit(task);
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "nn/module.h"
#include "nn/optim/exponential_moving_average.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/optimizer.h"
#include "train/checkpoint.h"
#include "train/data_parallel_run.h"
#include "train/history.h"
#include "train/output_paths.h"
#include "train/saved_run_state.h"

namespace sg::train {

// A training batch: the tensors one step reads, by name ("src", "tgt"), each with the batch's
// rows first.
using Batch = std::map<std::string, Tensor>;

// What one training step computed, still on the model's device (nothing is read back here).
struct StepOutput {
  Tensor loss;  // the scalar the step minimises
  // The token accuracy's two counts (scalars: predictions right, tokens counted); undefined when
  // the task has none (the progress line then shows no accuracy).
  Tensor right, counted;
};

class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  // The next training batch, drawn from the task's data on the host (Lightning's dataloader).
  // The loop, not the task, takes this rank's rows of each tensor (data parallelism) and puts them
  // on the model's device, so that the step reads nothing but its batch and the model.
  virtual Batch next_batch() = 0;
  // The loss of `batch` (this rank's rows, on the model's device). The model is in training mode
  // and, with bf16, autocast is on; the loop then runs backward and the update (Lightning's
  // training_step).
  virtual StepOutput training_step(const Batch& batch) = 0;
  // The held-out metrics of the model's current weights (the loop has swapped in the weights it
  // evaluates, and puts the model back in training mode after). Lightning's validation loop.
  virtual Metrics evaluate() = 0;
  // One line for people about an evaluation: "held-out exact match 99.50%".
  virtual std::string describe(const Metrics& metrics) const;
  // The task's part of every checkpoint's metadata: its format, configuration, vocabularies and
  // the state of its data streams (Lightning's on_save_checkpoint). Keys the loop writes itself
  // (Trainer::kLoopKeys) are refused.
  virtual nn::Metadata checkpoint_metadata() const = 0;
  // The files the task reads, with their flags ({"--data", path}): no output of the run (the
  // metrics, the log) may replace one.
  virtual std::vector<NamedPath> input_files() const { return {}; }
  // On --resume, before the weights and the optimizer are restored: checks that the saved run is
  // this one (configuration, data) and restores the data streams (Lightning's
  // on_load_checkpoint).
  virtual void load_checkpoint(const Checkpoint& last) = 0;
  // After each evaluation (`best`: it is the new model.safetensors) and after the last step:
  // the task's charts and files (Keras' on_test_end and on_train_end); the loop itself writes
  // loss.svg, the loss of every step.
  virtual void on_evaluation(int64_t /*step*/, const Metrics& /*metrics*/, bool /*best*/) {}
  virtual void on_train_end(const History& /*history*/) {}
  // The names of the files the task writes into the run's directory ({"dev_error_rates.svg"}):
  // a run that starts over removes them with the old run's checkpoints.
  virtual std::vector<std::string> output_files() const { return {}; }
};

struct TrainerOptions {
  std::string out_dir;
  // Continue the run in out_dir from its last.safetensors; or replace the run there. Without
  // either, a directory that holds a run is refused.
  bool resume = false, overwrite = false;
  bool quiet = false;  // no progress and no evaluation lines
  int64_t steps = 0;   // the run's length
  // This process stops after this step even if the run is longer (kill-and-resume tests); 0: no.
  int64_t stop_after = 0;
  int64_t eval_every = 0;  // and at the last step
  // last.safetensors every so many steps (0: at the end only); with average_last, the evaluated
  // weights too, as checkpoint-<step>.safetensors, the newest average_last of them kept and their
  // mean evaluated at the end (averaged.safetensors, and model.safetensors if it is the best).
  int64_t checkpoint_every = 0;
  int64_t average_last = 0;
  int64_t sync_every = 1;   // steps between reads of the loss back to the host
  int64_t print_every = 0;  // a progress line every so many steps off a terminal (0: eval_every)
  bool bf16 = false;        // the forward and the loss under bfloat16 autocast
  // On a GPU: each step (the forward, the loss, backward, the update) captured once as a CUDA
  // graph after the first eager step, then replayed with each batch copied into the graph's
  // inputs (graphed_step.h): the same results without a launch per kernel. Every batch must have
  // the first one's shapes; not with a moving average or several ranks, whose work is not
  // captured.
  bool cuda_graph = false;
  // sg::use_deterministic_algorithms(true) for the run (Lightning's Trainer(deterministic=True)):
  // the GPU's order-dependent sums in a fixed order, so a run repeats itself bit for bit
  // (autograd/deterministic.h). Off: the process's setting stays as it is.
  bool deterministic = false;
  double ema_decay = 0;  // > 0: keep a moving average of the weights and evaluate it
  // The metric that picks model.safetensors, and whether more is better (Keras'
  // ModelCheckpoint(monitor, mode)). Ties go to the later evaluation.
  std::string monitor;
  bool maximize = false;
  // What a user whose run diverged can do: "lower --lr-factor or raise --warmup".
  std::string divergence_advice;
  std::string log_jsonl;  // one JSON line per evaluation, appended (empty: none)
  // The run's numbers at the end, as one JSON object (fit_report.h), written atomically (empty:
  // none).
  std::string metrics_json;

  // Clear errors for counts out of range, resume with overwrite, no monitor.
  void validate() const;
  // The two rules no single bound catches, which LoopConfig::check states for a program's flags
  // too: the moving average's decay in [0, 1), and averaging only with step checkpoints.
  static void check_moving_average(double ema_decay);
  static void check_checkpoint_averaging(int64_t average_last, int64_t checkpoint_every);
};

struct FitResult {
  int64_t steps = 0;           // the run's steps so far (a resumed run's earlier ones included)
  int world_size = 1;          // the ranks that trained (data_parallel_run.h)
  int64_t gradient_bytes = 0;  // all-reduced per step by each rank (0 alone)
  std::vector<int64_t> optimizer_state_bytes;  // the moments each rank holds at the end
  double train_seconds = 0;                    // of this process
  double median_ms_per_step = 0;               // of this process's steps
  History history;        // every step's loss, every evaluation (with its "train_seconds")
  int64_t best_step = 0;  // 0: no evaluation yet
  Metrics best;           // the evaluation of model.safetensors
  std::vector<int64_t> averaged_steps;  // with average_last: the steps averaged at the end
  Metrics averaged;                     // and their mean's evaluation
  // A few lines for people (fit_report.h): steps, time and loss, the best evaluation and the
  // mean's, in the task's words. What a program prints at the end.
  std::string summary;
};

class Trainer {
 public:
  // The metadata keys the loop writes into every checkpoint.
  static const std::vector<std::string> kLoopKeys;

  // The model (built and seeded by the caller), its optimizer and the schedule that sets the
  // optimizer's lr from its step count; they must outlive the Trainer. With `ranks` (data
  // parallelism over the ranks of an mpirun job, data_parallel_run.h; it must outlive the Trainer
  // too), every rank calls fit(): each step's gradients are averaged over the ranks before the
  // update and the logged loss is the ranks' mean; each rank draws dropout from a stream of its
  // own, saved in every last.safetensors ("rank_rngs") and restored on --resume; rank 0 alone
  // evaluates, prints and writes files. The loop gives each rank its rows of every batch
  // (ranks.my_rows); the task's evaluate() must use no collective.
  Trainer(nn::Module& model, optim::Optimizer& optimizer, optim::LRScheduler& schedule,
          TrainerOptions options, DataParallelRun* ranks = nullptr);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains from the start, or from last.safetensors with options.resume, up to options.steps (or
  // stop_after). A non-finite loss stops the run with an error naming the step.
  FitResult fit(TrainingTask& task);

  // The moving average of the weights (with ema_decay > 0), else null.
  const optim::ExponentialMovingAverage* ema() const { return ema_.get(); }

 private:
  struct Loop;
  nn::Module& model_;
  optim::Optimizer& optimizer_;
  optim::LRScheduler& schedule_;
  TrainerOptions options_;
  std::unique_ptr<DataParallelRun> alone_;  // one rank, when no `ranks` were given
  DataParallelRun* ranks_;
  std::unique_ptr<optim::ExponentialMovingAverage> ema_;
};

}  // namespace sg::train
