// The NCCL backend: collectives on CUDA tensors, GPU to GPU (NVLink, PCIe, or the network)
// without a copy through the host. One communicator per process group and GPU, set up through
// MPI: rank 0 makes NCCL's unique id and broadcasts it, then every rank joins (ncclCommInitRank),
// as llm.c does. NCCL calls are queued on the default stream, where every scratchgrad kernel runs,
// so a later kernel sees the result without the host waiting. Built only with CUDA and NCCL.
#pragma once

#include <mpi.h>

#include <chrono>

#include "autograd/tensor.h"
#include "distributed/process_group.h"

namespace sg::distributed {

class NcclCommunicator {
 public:
  // Collective over `comm`: every rank calls it, each with its own GPU `device`.
  NcclCommunicator(MPI_Comm comm, int device, std::chrono::milliseconds timeout);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int device() const { return device_; }
  void all_reduce(const Tensor& tensor, ReduceOp op);
  void broadcast(const Tensor& tensor, int root);
  // Every rank's `input` side by side in `output` (ProcessGroup::all_gather_into).
  void all_gather(const Tensor& output, const Tensor& input);

 private:
  struct State;
  State* state_;
  int device_;
  int rank_ = 0;
};

}  // namespace sg::distributed
