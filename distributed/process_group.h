// A process group: the processes of one job (started by mpirun), each with a rank in
// [0, world_size), and the collectives they call together (torch.distributed's API):
//
//   auto group = sg::distributed::init_process_group();  // MPI_Init; a group of 1 outside mpirun
//   group->all_reduce(grad, ReduceOp::Average);          // every rank ends with the same mean
//   group->broadcast(weight, /*root=*/0);                // every rank gets rank 0's values
//   group->all_gather_into(all, mine);                   // every rank's `mine`, side by side
//   group->barrier();
//
// Transports: CPU tensors of ranks on one machine go through memory the ranks share
// (distributed/shared_memory_collectives.h); between machines, and for broadcast and barrier,
// through MPI. CUDA tensors go through NCCL where this build has it (SCRATCHGRAD_HAS_NCCL); NCCL's
// communicator is set up through MPI on first use. Collectives work in place on a contiguous
// tensor: every rank passes a tensor of the same dtype and shape, and every rank calls the same
// collectives in the same order. all_reduce takes float32, float64 and int64 (int64 sums only);
// broadcast and all_gather_into also bool.
//
// Mismatches are caught, not left to hang or to scramble memory: before each collective every
// rank shares a small signature (the operation, dtype, device type, shape, root) with all the
// others, one 120-byte all-gather, and if any differ every rank throws the same sg::Error naming
// the operation and each rank's tensor. A rank that never arrives (it died, or took another path)
// is reported after `timeout` instead of waiting forever. docs/15-distributed.md has the costs.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "autograd/tensor.h"

namespace sg::distributed {

enum class ReduceOp { Sum, Average };

// A collective started by an *_async call; its result is in the tensor once wait() returns.
// wait() throws sg::Error (naming the operation and the rank) on a failure or a timeout.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  // Lets the collective advance without waiting for it. Open MPI moves a non-blocking collective
  // forward only inside MPI calls (it has no progress thread), so a caller that computes between
  // start and wait() calls this now and then to keep the data flowing meanwhile.
  virtual void progress() {}
};

struct ProcessGroupOptions {
  // How long a collective may wait for the other ranks before it fails with an error (PyTorch's
  // init_process_group(timeout=...)). A live job never waits this long: ranks run in step.
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // When every rank runs on one machine, all-reduce and all-gather CPU tensors through memory the
  // ranks share instead of through MPI's messages (faster: docs/15-distributed.md). The
  // environment variable SCRATCHGRAD_SHARED_MEMORY=0 turns it off for every group.
  bool shared_memory = true;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // This rank's index among the ranks on its own machine: the GPU it drives (one rank per GPU).
  virtual int local_rank() const = 0;
  // What carries this group's collectives on `device`: "nccl" (CUDA), "shm" (CPU tensors, every
  // rank on one machine) or "mpi".
  virtual std::string backend_name(Device device) const = 0;

  // In place on every rank: tensor = sum (or mean) of every rank's tensor.
  virtual void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum) = 0;
  // Starts the same all-reduce and returns at once: the caller keeps computing, and calls wait()
  // before reading the tensor (or writing it).
  virtual std::unique_ptr<Work> all_reduce_async(const Tensor& tensor,
                                                 ReduceOp op = ReduceOp::Sum) = 0;
  // In place on every rank: tensor = root's tensor.
  virtual void broadcast(const Tensor& tensor, int root = 0) = 0;
  // Every rank's `input` (n elements) side by side in `output` (N·n elements of the same dtype):
  // rank r's at elements [r·n, (r+1)·n), whatever the shapes (torch's all_gather_into_tensor).
  virtual void all_gather_into(const Tensor& output, const Tensor& input) = 0;
  virtual void barrier() = 0;
};

// Joins the job that mpirun started (initialising MPI once; a later call returns the same group).
// Run outside mpirun it is a group of one process, where every collective is the identity.
std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options = {});
bool is_initialized();
std::shared_ptr<ProcessGroup> default_group();  // the group init_process_group made; throws before
// Another group of the same processes, with its own options and its own communicator (its
// collectives never mix with the default group's). Every rank calls it, after init_process_group.
std::shared_ptr<ProcessGroup> new_group(const ProcessGroupOptions& options);
// Whether this process was started by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE and the
// like), without initialising MPI.
bool launched_by_mpirun();
// Ends every process of the job with `exit_code`: what a rank calls after an error it cannot
// recover from, so the other ranks do not wait for it (MPI_Abort).
[[noreturn]] void abort_job(int exit_code);
// Finalises MPI (once, at the end of the program; also registered with atexit by
// init_process_group).
void destroy_process_group();

}  // namespace sg::distributed
