// ZeRO stage 1 (Rajbhandari et al., 2020; PyTorch's ZeroRedundancyOptimizer): the optimizer's
// state sharded over the ranks. With data parallelism every rank holds the whole model and takes
// the same step, so N ranks would keep N identical copies of Adam's two moments (twice the model's
// size each). Here the parameters are split into N contiguous shards of about equal size; rank r
// builds its own optimizer over shard r alone, steps only those parameters (from the gradients
// DistributedDataParallel averaged), and then every rank's updated shard is all-gathered so that
// all ranks hold the whole updated model again. Each rank keeps about 1/N of the state.
//
//   sg::nn::DistributedDataParallel ddp(model, group);
//   sg::distributed::ZeroRedundancyOptimizer optimizer(
//       model->parameters(), group, [](std::vector<sg::Tensor> shard) {
//         return std::make_unique<sg::optim::Adam>(std::move(shard), sg::optim::AdamOptions{});
//       });
//   ... loss.backward(); ddp.finish_gradient_sync(); optimizer.step(); ...
//
// The update of each parameter is the one the unsharded optimizer makes, on the same tensors, so
// training takes the same steps bit for bit. It is an Optimizer: schedules set its lr, zero_grad
// clears every gradient. Checkpoints: consolidate_state() (every rank) gathers the whole state on
// one rank, whose state() then returns it in the unsharded optimizer's format ("exp_avg.<i>" with
// i over all parameters), so a checkpoint loads into a sharded or an unsharded optimizer alike;
// load_state() on every rank keeps the entries of its own shard.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "distributed/process_group.h"
#include "nn/optim/optimizer.h"

namespace sg::distributed {

using optim::NamedTensors;

struct ZeroRedundancyOptions {
  // The updated parameters travel in all-gathers of at most this many bytes per rank, through
  // buffers of (N + 1) times it: a bounded cost next to the state it saves.
  int64_t gather_bytes = 2 * 1024 * 1024;
};

class ZeroRedundancyOptimizer : public optim::Optimizer {
 public:
  // Builds the optimizer of this rank's shard from its parameters (one group).
  using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

  // Every rank passes the same parameters, in the same order (contiguous, one dtype and device,
  // at least one per rank). Collective only in step(), consolidate_state() and load_state().
  ZeroRedundancyOptimizer(std::vector<Tensor> params, std::shared_ptr<ProcessGroup> group,
                          const Factory& make_optimizer, ZeroRedundancyOptions options = {});

  // Steps this rank's shard with the lr this optimizer holds, then all-gathers every shard.
  void step() override;

  // Every rank calls it; rank `to` then holds the whole state, which its state() returns, until
  // the next step() (the other ranks' state() is refused).
  void consolidate_state(int to = 0);
  NamedTensors state() const override;
  // The whole state (as state() returns it, or an unsharded optimizer's): every rank calls it
  // with the same entries and keeps its shard's. Errors are the same on every rank; after one,
  // a rank whose own shard did load has the new state, so do not go on training.
  void load_state(const NamedTensors& state) override;

  // Rank r's shard: the parameters [first, first + count) of params().
  std::pair<size_t, size_t> shard(int rank) const;
  // Bytes of state (the update's per-parameter tensors) this rank holds, and of the all-gather
  // buffers it keeps.
  int64_t state_bytes() const;
  int64_t buffer_bytes() const;
  optim::Optimizer& shard_optimizer() { return *local_; }

 protected:
  void update(size_t, Tensor&, const Tensor&) override {}  // the shard's optimizer updates

 private:
  void all_gather_parameters();

  std::shared_ptr<ProcessGroup> group_;
  std::vector<size_t> bounds_;   // shard r: parameters [bounds_[r], bounds_[r + 1])
  std::vector<int64_t> offset_;  // each parameter's first element within its shard
  int64_t shard_numel_ = 0;      // the largest shard's elements: what each rank sends
  std::unique_ptr<optim::Optimizer> local_;
  Tensor send_, receive_;  // one all-gather's worth: per rank, and from all ranks
  int consolidated_on_ = -1;
  int64_t consolidated_at_ = -1;  // the step count when consolidated
  NamedTensors consolidated_;
};

}  // namespace sg::distributed
