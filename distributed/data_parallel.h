// Data-parallel training (PyTorch's DistributedDataParallel): every rank holds a full copy of the
// model, trains on its own shard of each batch, and the gradients are averaged across ranks
// before the optimizer steps, so every rank takes the same step and the copies stay identical.
//
//   auto group = sg::distributed::init_process_group();
//   sg::nn::DistributedDataParallel ddp(model, group);  // broadcasts rank 0's parameters
//   for (...) {
//     optimizer.zero_grad();
//     loss_on_my_shard(*model).backward();  // all-reduces start while backward runs
//     ddp.finish_gradient_sync();           // every .grad() is now the mean over ranks
//     optimizer.step();
//   }
//
// Buckets and overlap. The parameters, in reverse registration order (backward finishes the last
// layers first), are packed into buckets of at most bucket_cap_bytes. A post-accumulate-grad hook
// on each parameter (autograd/grad_hooks.h) copies its finished gradient into its bucket; when a
// bucket is full its all-reduce starts at once (MPI_Iallreduce, or NCCL on a GPU) and backward
// goes on with earlier layers meanwhile. Buckets start strictly in order, so every rank issues the
// same collectives in the same sequence. When the last bucket has started, the hook waits for all
// of them and writes the averaged gradients back into .grad(); finish_gradient_sync() then has
// nothing left to do, except after a backward that left some parameters without a gradient (their
// share is zero, as if they had been used with zero effect).
//
// The average: each bucket is summed over ranks and divided by the world size. With a loss that is
// a mean over the rank's B/N examples, the mean of the N ranks' gradients is the gradient of the
// mean over all B examples: the same step as one process with batch B (when every rank's shard
// holds as many examples, or tokens for a per-token mean; global_mean_loss when they do not).
//
// Gradient accumulation (no_sync): backward passes inside a no_sync() guard only add into
// .grad() on each rank; the first backward after the guard averages the accumulated sums:
//
//   {
//     auto guard = ddp.no_sync();
//     for (int k = 0; k + 1 < K; ++k) (loss_on(micro_batch(k)) / K).backward();   // local only
//   }
//   (loss_on(micro_batch(K - 1)) / K).backward();   // all-reduces the sum of the K gradients
//   ddp.finish_gradient_sync();
//   optimizer.step();
#pragma once

#include <memory>
#include <vector>

#include "autograd/grad_hooks.h"
#include "distributed/process_group.h"
#include "nn/module.h"

namespace sg::nn {

struct DistributedDataParallelOptions {
  // Largest bucket, in bytes of gradient (PyTorch's bucket_cap_mb = 25). Smaller buckets start
  // communicating sooner in backward but pay the per-collective latency more often.
  int64_t bucket_cap_bytes = 25 * 1024 * 1024;
  // Copy rank 0's parameters and buffers to every rank at construction (as PyTorch does), so the
  // ranks start from the same model whatever their seeds.
  bool broadcast_from_rank0 = true;
};

class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<Module> module,
                          std::shared_ptr<distributed::ProcessGroup> group,
                          DistributedDataParallelOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  Module& module() { return *module_; }
  distributed::ProcessGroup& group() { return *group_; }

  // While the guard lives, backward neither copies gradients into buckets nor communicates, and
  // finish_gradient_sync() does nothing: gradients accumulate in .grad() on each rank alone
  // (PyTorch's no_sync()). Guards nest; the outermost one's end turns synchronisation back on.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp) : ddp_(&ddp), was_(ddp.sync_enabled_) {
      ddp.sync_enabled_ = false;
    }
    ~NoSyncGuard() {
      if (ddp_ != nullptr) ddp_->sync_enabled_ = was_;
    }
    NoSyncGuard(NoSyncGuard&& other) noexcept : ddp_(other.ddp_), was_(other.was_) {
      other.ddp_ = nullptr;
    }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(NoSyncGuard&&) = delete;

   private:
    DistributedDataParallel* ddp_;
    bool was_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  // The loss to call backward on for a mean over every rank's tokens (or examples) when the ranks
  // hold different numbers of them (padding, uneven shards). The average over ranks is the
  // gradient of the global mean only if each rank's loss weighs its tokens by 1 / (all ranks'
  // tokens): pass this rank's *sum* of per-token losses and its count; the counts are summed over
  // ranks (one all-reduce of one int64: every rank calls this, before backward) and the result is
  // local_sum · N / total. The mean of the returned values over the ranks is the global mean.
  Tensor global_mean_loss(const Tensor& local_sum, int64_t local_count);

  // Makes sure every parameter's .grad() holds this step's average over ranks: starts the buckets
  // no hook started (a parameter the last backward did not reach sends the gradient it has, from
  // an earlier no_sync backward, or zeros), waits for all, and writes the results back. Call it
  // after backward() and before optimizer.step(); it costs nothing when backward already finished
  // the synchronisation, and does nothing inside a no_sync() guard.
  void finish_gradient_sync();

  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }
  // Bytes of gradient each rank all-reduces per step (the sum of the bucket sizes). A ring
  // all-reduce sends and receives 2 (N-1)/N times this per rank.
  int64_t gradient_bytes() const;

 private:
  struct Bucket;
  void on_gradient_ready(size_t param_index);
  void start_ready_buckets();
  void wait_and_write_back();

  std::shared_ptr<Module> module_;
  std::shared_ptr<distributed::ProcessGroup> group_;
  std::vector<Tensor> params_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  // params_[i] lives in buckets_[slot_[i].first] at element offset slot_[i].second.
  std::vector<std::pair<size_t, int64_t>> slot_;
  std::vector<HookHandle> hooks_;
  std::vector<bool> filled_;  // params_[i]'s gradient is in its bucket this step
  size_t next_to_start_ = 0;  // buckets start in order: [0, next_to_start_) are in flight
  bool synced_ = false;       // this step's gradients are averaged and back in .grad()
  bool sync_enabled_ = true;  // false inside no_sync()
};

}  // namespace sg::nn
