// --distributed: the copy task's side of data-parallel training (docs/15-distributed.md). Every
// rank draws the same global batch from the same data stream and trains on its own rows of it, so
// the ranks together see exactly what one process with the whole batch sees, and the data state a
// checkpoint saves is the same on every rank (a resumed run needs only rank 0's files).
// Without --distributed (or in a build without MPI) it is the identity: one rank, the whole batch.
#pragma once

#include <memory>

#include "config.h"
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
  // Between backward and the optimizer step: every gradient is the mean over ranks after it.
  void finish_gradient_sync();
  // The element-wise mean of `t` over ranks (t itself with one rank).
  sg::Tensor mean_over_ranks(const sg::Tensor& t) const;
  // Bytes of gradient each rank all-reduces per step (0 without --distributed).
  int64_t gradient_bytes() const;

 private:
#if SG_COPY_TASK_DISTRIBUTED
  std::shared_ptr<sg::distributed::ProcessGroup> group_;
  std::unique_ptr<sg::nn::DistributedDataParallel> ddp_;
#endif
};

// This process's rank and the number of ranks once --distributed has joined the job (0 and 1
// before, or without MPI), and ending every rank after an error (MPI_Abort).
void join_distributed_job();  // init_process_group(), or an error in a build without MPI
int distributed_rank();
int distributed_world_size();
int distributed_local_rank();  // joins the job first; the rank's index on its machine
[[noreturn]] void abort_distributed_job(int exit_code);

}  // namespace copy_task
