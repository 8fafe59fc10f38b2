#include "distributed_training.h"

#include <algorithm>
#include <cstdlib>

namespace copy_task {

DataParallelRun::DataParallelRun(const std::shared_ptr<sg::nn::Module>& model, const Config& config,
                                 const TrainOptions& options) {
  if (!options.distributed) return;
#if SG_COPY_TASK_DISTRIBUTED
  join_distributed_job();
  group_ = sg::distributed::default_group();
  SG_CHECK(config.batch % group_->world_size() == 0,
           "--distributed: the batch of {} does not split evenly over {} ranks", config.batch,
           group_->world_size());
  const auto cap = static_cast<int64_t>(options.bucket_mb * 1024 * 1024);
  ddp_ = std::make_unique<sg::nn::DistributedDataParallel>(
      model, group_,
      sg::nn::DistributedDataParallelOptions{.bucket_cap_bytes = std::max<int64_t>(cap, 1)});
#else
  (void)model, (void)config;
  SG_FAIL(
      "--distributed: this build has no MPI (apt-get install libopenmpi-dev openmpi-bin, "
      "then configure again)");
#endif
}

int DataParallelRun::rank() const {
#if SG_COPY_TASK_DISTRIBUTED
  if (group_) return group_->rank();
#endif
  return 0;
}

int DataParallelRun::world_size() const {
#if SG_COPY_TASK_DISTRIBUTED
  if (group_) return group_->world_size();
#endif
  return 1;
}

Batch DataParallelRun::my_rows(const Batch& global) const {
  const int n = world_size();
  if (n == 1) return global;
  const int64_t rows = global.src.size(0) / n, start = rank() * rows;
  return {global.src.narrow(0, start, rows).contiguous(),
          global.tgt.narrow(0, start, rows).contiguous(),
          global.lengths.narrow(0, start, rows).contiguous()};
}

int64_t DataParallelRun::gradient_bytes() const {
#if SG_COPY_TASK_DISTRIBUTED
  if (ddp_) return ddp_->gradient_bytes();
#endif
  return 0;
}

void DataParallelRun::finish_gradient_sync() {
#if SG_COPY_TASK_DISTRIBUTED
  if (ddp_) ddp_->finish_gradient_sync();
#endif
}

sg::Tensor DataParallelRun::mean_over_ranks(const sg::Tensor& t) const {
#if SG_COPY_TASK_DISTRIBUTED
  if (group_ && group_->world_size() > 1) {
    sg::Tensor mean = t.contiguous().clone();
    group_->all_reduce(mean, sg::distributed::ReduceOp::Average);
    return mean;
  }
#endif
  return t;
}

void join_distributed_job() {
#if SG_COPY_TASK_DISTRIBUTED
  sg::distributed::init_process_group();
#else
  SG_FAIL(
      "--distributed: this build has no MPI (apt-get install libopenmpi-dev openmpi-bin, "
      "then configure again)");
#endif
}

int distributed_rank() {
#if SG_COPY_TASK_DISTRIBUTED
  if (sg::distributed::is_initialized()) return sg::distributed::default_group()->rank();
#endif
  return 0;
}

int distributed_world_size() {
#if SG_COPY_TASK_DISTRIBUTED
  if (sg::distributed::is_initialized()) return sg::distributed::default_group()->world_size();
#endif
  return 1;
}

int distributed_local_rank() {
  join_distributed_job();
#if SG_COPY_TASK_DISTRIBUTED
  return sg::distributed::default_group()->local_rank();
#else
  return 0;
#endif
}

void abort_distributed_job(int exit_code) {
#if SG_COPY_TASK_DISTRIBUTED
  sg::distributed::abort_job(exit_code);
#else
  std::_Exit(exit_code);
#endif
}

}  // namespace copy_task
