// --distributed: the copy task's side of data-parallel training (docs/15-distributed.md). Every
// rank draws the same global batch from the same data stream and trains on its own rows of it, so
// the ranks together see exactly what one process with the whole batch sees, and the data state a
// checkpoint saves is the same on every rank (a resumed run needs only rank 0's files). What does
// differ between ranks is kept per rank: each rank's dropout stream, seeded from the run's seed
// and the rank, and saved by rank 0 for all (RunState::rank_rngs). With --zero1 each rank keeps
// only its shard of Adam's state (sg::distributed::ZeroRedundancyOptimizer), gathered into rank 0
// for the one-file checkpoint.
// Without --distributed (or in a build without MPI) it is the identity: one rank, the whole batch.
#pragma once

#include <memory>

#include "config.h"
#include "run_state.h"
#include "tasks.h"
#include "trainer.h"

#if SG_COPY_TASK_DISTRIBUTED
#include "distributed/data_parallel.h"
#endif

namespace copy_task {

class DataParallelRun {
 public:
  // With options.distributed: joins the mpirun job, checks that the batch splits evenly, and
  // wraps `model` (whose parameters become rank 0's).
  DataParallelRun(const std::shared_ptr<sg::nn::Module>& model, const Config& config,
                  const TrainOptions& options);

  int rank() const;
  int world_size() const;
  // This rank's rows of a global batch: rows [rank·B/N, (rank+1)·B/N).
  Batch my_rows(const Batch& global) const;
  // The loss to backpropagate for the per-token mean over every rank's tokens, from this rank's
  // sum over its `tokens` tokens (DistributedDataParallel::global_mean_loss): exact when the
  // ranks' rows hold different numbers of tokens (padding). With one rank: sum / tokens.
  sg::Tensor per_token_mean(const sg::Tensor& loss_sum, int64_t tokens) const;
  // Between backward and the optimizer step: every gradient is the mean over ranks after it.
  void finish_gradient_sync();
  // The element-wise mean of `t` over ranks (t itself with one rank).
  sg::Tensor mean_over_ranks(const sg::Tensor& t) const;
  // Bytes of gradient each rank all-reduces per step (0 without --distributed).
  int64_t gradient_bytes() const;

  // The dropout stream (the global generator, which only dropout draws from during training):
  // with more than one rank each rank's own, from `state.rank_rngs` when resuming a run of as many
  // ranks, else seeded from the run's seed and the rank. Alone: `state.global_rng` when resuming.
  // Returns a note for the user when a resumed run cannot continue the saved streams.
  std::string start_dropout_streams(const Config& config, const RunState& state, bool resumed);
  // Fills state.global_rng and, with more than one rank, state.rank_rngs (collective).
  void save_dropout_streams(RunState& state) const;
  // Before rank 0 writes a checkpoint: a sharded optimizer's state gathered on rank 0 (collective).
  void gather_optimizer_state(sg::optim::Optimizer& optimizer) const;
  // Bytes of optimizer state each rank holds, in rank order (collective).
  std::vector<int64_t> optimizer_state_bytes(const sg::optim::Optimizer& optimizer) const;

 private:
#if SG_COPY_TASK_DISTRIBUTED
  std::shared_ptr<sg::distributed::ProcessGroup> group_;
  std::unique_ptr<sg::nn::DistributedDataParallel> ddp_;
#endif
};

// Adam with the config's betas and eps (lr 1: the schedule scales it), or with options.zero1 its
// sharded form over the ranks of the job.
std::unique_ptr<sg::optim::Optimizer> make_optimizer(const std::vector<sg::Tensor>& params,
                                                     const Config& config,
                                                     const TrainOptions& options);

// This process's rank and the number of ranks once --distributed has joined the job (0 and 1
// before, or without MPI), and ending every rank after an error (MPI_Abort).
void join_distributed_job();  // init_process_group(), or an error in a build without MPI
int distributed_rank();
int distributed_world_size();
int distributed_local_rank();  // joins the job first; the rank's index on its machine
// Refuses, on every rank alike, ranks started with different settings (the config and the
// options that decide what the ranks do together), naming each flag and each rank's value.
void check_same_settings_on_every_rank(const Config& config, const TrainOptions& options);
// Whether `error` was thrown alike on every rank (so each may end normally, and rank 0 report it).
bool failed_alike_on_every_rank(const std::exception& error);
[[noreturn]] void abort_distributed_job(int exit_code);

}  // namespace copy_task
