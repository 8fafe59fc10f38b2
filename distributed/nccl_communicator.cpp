#include "distributed/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/error.h"
#include "autograd/storage.h"
#include "distributed/collective_check.h"
#include "distributed/mpi_wait.h"

namespace sg::distributed {

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
};

namespace {

// The stream of the tensor's device, the one its kernels run on: a collective queued there runs
// in order with them (and a CUDA graph capture can record it).
cudaStream_t stream_of(const Tensor& tensor) { return cuda_stream(tensor.device().index); }

ncclDataType_t nccl_type_of(DType dtype) {
  switch (dtype) {
    case kFloat64:
      return ncclFloat64;
    case kInt64:
      return ncclInt64;
    case kBool:
      return ncclUint8;  // copied (broadcast, all-gather), never summed
    default:
      return ncclFloat32;
  }
}

#define SG_NCCL_CHECK(call, what)                                              \
  do {                                                                         \
    const ncclResult_t sg_nccl_result_ = (call);                               \
    SG_CHECK(sg_nccl_result_ == ncclSuccess, "{}: NCCL failed: {} ({})", what, \
             ncclGetErrorString(sg_nccl_result_), ncclGetLastError(nullptr));  \
  } while (false)

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm comm, int device, std::chrono::milliseconds timeout)
    : state_(new State), device_(device) {
  int size = 1;
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size);
  const std::string what = fmt::format("NCCL setup on rank {} (cuda:{})", rank_, device);
  ncclUniqueId id{};
  if (rank_ == 0) SG_NCCL_CHECK(ncclGetUniqueId(&id), what);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibcast(&id, sizeof(id), MPI_BYTE, 0, comm, &request);
  wait_for(request, what, timeout);
  const cudaError_t set = cudaSetDevice(device);
  SG_CHECK(set == cudaSuccess, "{}: cudaSetDevice: {}", what, cudaGetErrorString(set));
  SG_NCCL_CHECK(ncclCommInitRank(&state_->comm, size, id, rank_), what);
}

NcclCommunicator::~NcclCommunicator() {
  if (state_->comm != nullptr) ncclCommDestroy(state_->comm);
  delete state_;
}

void NcclCommunicator::all_reduce(const Tensor& tensor, ReduceOp op) {
  const std::string what = fmt::format("all_reduce on rank {} with {}", rank_, describe(tensor));
  // ncclAvg divides on the GPU inside the same kernel (NCCL >= 2.10).
  SG_NCCL_CHECK(
      ncclAllReduce(tensor.raw_data(), tensor.raw_data(), static_cast<size_t>(tensor.numel()),
                    nccl_type_of(tensor.dtype()), op == ReduceOp::Average ? ncclAvg : ncclSum,
                    state_->comm, stream_of(tensor)),
      what);
  tensor.impl()->storage->bump_version();
}

void NcclCommunicator::all_gather(const Tensor& output, const Tensor& input) {
  const std::string what =
      fmt::format("all_gather_into on rank {} with {}", rank_, describe(input));
  SG_NCCL_CHECK(
      ncclAllGather(input.raw_data(), output.raw_data(), static_cast<size_t>(input.numel()),
                    nccl_type_of(input.dtype()), state_->comm, stream_of(input)),
      what);
  output.impl()->storage->bump_version();
}

void NcclCommunicator::broadcast(const Tensor& tensor, int root) {
  const std::string what = fmt::format("broadcast on rank {} with {}", rank_, describe(tensor));
  SG_NCCL_CHECK(
      ncclBroadcast(tensor.raw_data(), tensor.raw_data(), static_cast<size_t>(tensor.numel()),
                    nccl_type_of(tensor.dtype()), root, state_->comm, stream_of(tensor)),
      what);
  tensor.impl()->storage->bump_version();
}

}  // namespace sg::distributed
