// A training program's side of data parallelism (docs/15-distributed.md): what a run started by
// `mpirun -np N` needs around scratchgrad::distributed, and the identity when it runs alone.
//
// Every rank draws the same global batch from the same data stream and trains on its own rows of
// it (my_rows), so the ranks together see exactly what one process with the whole batch sees, and
// the data state a checkpoint saves is the same on every rank. Gradients are averaged in buckets
// during backward (DistributedDataParallel); finish_gradient_sync() waits for the last bucket
// before the optimizer steps. What differs between ranks is kept per rank: each rank's dropout
// stream, seeded from the run's seed and the rank, saved by rank 0 for all. With zero1 each rank
// keeps only its shard of Adam's state (ZeroRedundancyOptimizer), gathered on rank 0 for the
// one-file checkpoint. Only rank 0 prints and writes files (writes()).
//
//   sg::train::DataParallelRun ranks(model, {.distributed = true, .bucket_mb = 25});
//   Tensor loss = loss_of(*model, ranks.my_rows(global_batch));
//   loss.backward();
//   ranks.finish_gradient_sync();
//   optimizer.step();
//
// Without `distributed`, or in a build without MPI (where asking for it is an error naming the
// packages to install), there is one rank and every call is the identity: a program writes its
// loop once for both.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/error.h"
#include "autograd/tensor.h"
#include "nn/module.h"
#include "nn/optim/adam.h"
#include "nn/optim/optimizer.h"
#include "nn/serialize.h"
#include "train/metadata.h"

namespace sg::train {

// An error every rank meets alike, at the same point and with no collective pending (a batch that
// does not split over the ranks): report_error lets each rank end normally and rank 0 alone
// print it, as for ranks started with different settings.
class FailsOnEveryRank : public Error {
 public:
  using Error::Error;
};

struct DataParallelOptions {
  bool distributed = false;  // join the job mpirun started; otherwise one rank
  double bucket_mb = 25;     // gradients all-reduced in buckets of this many MiB during backward
};

// The dropout generators of a run's ranks, as a checkpoint keeps them: `global` is this process's
// (rank 0's, in a checkpoint), `per_rank` every rank's in rank order (empty with one rank).
struct DropoutStreams {
  uint64_t global = 0;
  std::vector<uint64_t> per_rank;
};

// A checkpoint's metadata keys for them: "global_rng", and "rank_rngs" (a JSON list of decimal
// strings) when there are several ranks. Read strictly: a value that is not a generator state is an
// error naming the file and the key.
void write_dropout_streams(nn::Metadata& metadata, const DropoutStreams& streams);
DropoutStreams read_dropout_streams(const MetadataReader& metadata);

class DataParallelRun {
 public:
  // With options.distributed: joins the job and wraps `model`, whose parameters become rank 0's.
  DataParallelRun(const std::shared_ptr<nn::Module>& model, const DataParallelOptions& options);
  ~DataParallelRun();
  DataParallelRun(const DataParallelRun&) = delete;
  DataParallelRun& operator=(const DataParallelRun&) = delete;

  int rank() const;
  int world_size() const;
  bool writes() const { return rank() == 0; }  // the one rank that prints and writes files

  // An error naming `flag` unless a global batch of `rows` splits evenly over the ranks
  // (FailsOnEveryRank: every rank computes the same).
  void check_splits(int64_t rows, const std::string& flag) const;
  // This rank's rows of a global batch (dimension 0): rows [rank·B/N, (rank+1)·B/N).
  Tensor my_rows(const Tensor& global) const;
  // The loss to backpropagate for the per-token mean over every rank's tokens, from this rank's
  // sum over its `tokens` tokens (DistributedDataParallel::global_mean_loss): exact when the
  // ranks' rows hold different numbers of tokens (padding). With one rank: sum / tokens.
  Tensor per_token_mean(const Tensor& loss_sum, int64_t tokens) const;
  // Between backward and the optimizer step: every gradient is the mean over ranks after it.
  void finish_gradient_sync();
  // The element-wise mean of `t` over ranks (t itself with one rank). Collective.
  Tensor mean_over_ranks(const Tensor& t) const;
  // Bytes of gradient each rank all-reduces per step (0 with one rank).
  int64_t gradient_bytes() const;

  // Seeds the dropout stream (the global generator, which only dropout draws from in training):
  // resuming a run of as many ranks, each rank's saved stream (`saved.global` alone); a fresh run
  // alone keeps the stream its program seeded; otherwise a stream of the run's `seed`, the rank
  // and the epoch (0, or the resumed `step`), as when a run of several ranks resumes alone. Returns
  // a note for people when a resumed run with dropout cannot continue the saved streams (another
  // number of ranks), else "".
  std::string start_dropout_streams(uint64_t seed, bool resumed, int64_t step,
                                    const DropoutStreams& saved, bool has_dropout);
  // Every rank's dropout stream, for rank 0 to save. Collective.
  DropoutStreams dropout_streams() const;

  // Before rank 0 writes a checkpoint: a sharded optimizer's state gathered on rank 0. Collective.
  void gather_optimizer_state(optim::Optimizer& optimizer) const;
  // Bytes of optimizer state (moments, not step counts) each rank holds, in rank order.
  // Collective.
  std::vector<int64_t> optimizer_state_bytes(const optim::Optimizer& optimizer) const;

 private:
  struct Ranks;  // the process group and the DDP wrapper, where MPI is built in
  std::unique_ptr<Ranks> ranks_;
};

// Adam with `adam`'s options over `params`, or with zero1 its sharded form over the ranks of the
// job (ZeRO-1: each rank keeps 1/N of the state; an error in a build without MPI).
std::unique_ptr<optim::Optimizer> make_adam(const std::vector<Tensor>& params,
                                            const optim::AdamOptions& adam, bool zero1);

// The job mpirun started: joining it (an error in a build without MPI), this process's rank and
// the number of ranks (0 and 1 before joining or without MPI), the rank's index on its machine
// (joins first), and ending every rank after an error.
void join_distributed_job();
int distributed_rank();
int distributed_world_size();
int distributed_local_rank();
[[noreturn]] void abort_distributed_job(int exit_code);
// A training program's first step: with `options.distributed`, joins the job; without it, refuses
// (alike on every process) a process that mpirun started as one of several, naming --distributed:
// each would train a whole run alone, into the same --out.
void join_distributed_job_if_asked(const DataParallelOptions& options);

// Refuses, on every rank alike, ranks started with different settings: `settings` are (flag,
// value) pairs of what decides what the ranks do together; the CPU kernels (--kernels or
// SCRATCHGRAD_KERNELS) are added, since the same model on other kernels sums in another order.
// The error (thrown on every rank, naming each flag and each rank's value) starts with `program`.
// Collective; nothing alone.
void check_same_settings_on_every_rank(std::vector<std::pair<std::string, std::string>> settings,
                                       const std::string& program);
// Whether `error` was thrown alike on every rank (ranks started with different settings, or a
// FailsOnEveryRank), so each may end normally and rank 0 report it.
bool failed_alike_on_every_rank(const std::exception& error);

// What a program's main() does with an error: prints "<program>: error: <message>" and returns 1
// (the exit status). In a job of several ranks: an error thrown alike on every rank is printed by
// rank 0 alone and every rank ends normally; an error on one rank is printed with the rank's
// number and ends the whole job (the other ranks would wait for it in their next collective).
int report_error(const std::exception& error, const std::string& program);

}  // namespace sg::train
