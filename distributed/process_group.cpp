#include "distributed/process_group.h"

#include <mpi.h>

#include <cstdlib>
#include <mutex>

#include "autograd/error.h"
#include "autograd/grad_mode.h"
#include "autograd/storage.h"
#include "distributed/collective_check.h"
#include "distributed/mpi_wait.h"
#if SCRATCHGRAD_HAS_NCCL
#include "distributed/nccl_communicator.h"
#endif

namespace sg::distributed {

namespace {

std::mutex group_mutex;
std::shared_ptr<ProcessGroup> the_group;
bool we_initialised_mpi = false;

MPI_Datatype mpi_type_of(DType dtype) { return dtype == kFloat64 ? MPI_DOUBLE : MPI_FLOAT; }

// The in-place divide after a summing all-reduce, on the raw memory: the tensor may be a leaf
// that requires grad (a parameter), which in-place ops refuse, and this is not a step of the model.
void divide_in_place(const Tensor& tensor, int world_size) {
  if (tensor.dtype() == kFloat64) {
    double* p = tensor.data_ptr<double>();
    for (int64_t i = 0; i < tensor.numel(); ++i) p[i] /= world_size;
  } else {
    float* p = tensor.data_ptr<float>();
    for (int64_t i = 0; i < tensor.numel(); ++i) p[i] /= static_cast<float>(world_size);
  }
}

// Other tensors that saved this one for backward must see that it changed.
void mark_written(const Tensor& tensor) { tensor.impl()->storage->bump_version(); }

// An MPI_Iallreduce in flight; wait() finishes it (and the divide of an average).
class MpiWork final : public Work {
 public:
  MpiWork(Tensor tensor, MPI_Request request, ReduceOp op, int world_size, std::string what,
          std::chrono::milliseconds timeout)
      : tensor_(std::move(tensor)),
        request_(request),
        op_(op),
        world_size_(world_size),
        what_(std::move(what)),
        timeout_(timeout) {}
  ~MpiWork() override {
    // An unwaited request still writes into the tensor: finish it rather than leave MPI a
    // dangling buffer (only an exception unwinding past the owner gets here).
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  void progress() override {
    if (request_ == MPI_REQUEST_NULL) return;  // complete (MPI_Test resets a finished request)
    int done = 0;
    const int code = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
    SG_CHECK(code == MPI_SUCCESS, "{}: MPI failed: {}", what_, mpi_error_string(code));
  }
  void wait() override {
    if (waited_) return;
    if (request_ != MPI_REQUEST_NULL) wait_for(request_, what_, timeout_);
    waited_ = true;
    if (op_ == ReduceOp::Average) divide_in_place(tensor_, world_size_);
    mark_written(tensor_);
  }

 private:
  Tensor tensor_;
  MPI_Request request_;
  bool waited_ = false;  // wait() has returned: the result (and the average) is in the tensor
  ReduceOp op_;
  int world_size_;
  std::string what_;
  std::chrono::milliseconds timeout_;
};

// A collective that is already complete when it is returned (the identity of a group of one, or
// an NCCL call, which the GPU runs in stream order before any later kernel).
class DoneWork final : public Work {
 public:
  void wait() override {}
};

class MpiProcessGroup final : public ProcessGroup {
 public:
  explicit MpiProcessGroup(const ProcessGroupOptions& options) : options_(options) {
    // A communicator of our own: MPI_COMM_WORLD stays free for any other library in the program.
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    // Errors come back as codes (and become sg::Error) instead of aborting inside MPI.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    // The ranks that share this machine's memory, numbered from 0: the local rank.
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_free(&node);
  }

  ~MpiProcessGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string backend_name(Device device) const override {
    return device.is_cuda() ? "nccl" : "mpi";
  }

  void all_reduce(const Tensor& tensor, ReduceOp op) override {
    all_reduce_async(tensor, op)->wait();
  }

  std::unique_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op) override {
    check_same_on_all_ranks(comm_, "all_reduce", tensor, -1, static_cast<int>(op),
                            refusal("all_reduce", tensor), options_.timeout);
    // CUDA tensors go through NCCL even alone (a communicator of one): the GPU path is the same
    // on one GPU as on many.
    if (tensor.device().is_cuda()) {
      nccl_for(tensor, "all_reduce").all_reduce(tensor, op);
      return std::make_unique<DoneWork>();
    }
    if (size_ == 1) return std::make_unique<DoneWork>();
    MPI_Request request = MPI_REQUEST_NULL;
    const int code =
        MPI_Iallreduce(MPI_IN_PLACE, tensor.raw_data(), static_cast<int>(tensor.numel()),
                       mpi_type_of(tensor.dtype()), MPI_SUM, comm_, &request);
    SG_CHECK(code == MPI_SUCCESS, "all_reduce: rank {} with {}: MPI failed: {}", rank_,
             describe(tensor), mpi_error_string(code));
    return std::make_unique<MpiWork>(
        tensor, request, op, size_,
        fmt::format("all_reduce on rank {} with {}", rank_, describe(tensor)), options_.timeout);
  }

  void broadcast(const Tensor& tensor, int root) override {
    SG_CHECK(root >= 0 && root < size_, "broadcast: root {} is not a rank of this group of {}",
             root, size_);
    check_same_on_all_ranks(comm_, "broadcast", tensor, root, 0, refusal("broadcast", tensor),
                            options_.timeout);
    if (tensor.device().is_cuda()) {
      nccl_for(tensor, "broadcast").broadcast(tensor, root);
      return;
    }
    if (size_ == 1) return;
    MPI_Request request = MPI_REQUEST_NULL;
    const int code = MPI_Ibcast(tensor.raw_data(), static_cast<int>(tensor.numel()),
                                mpi_type_of(tensor.dtype()), root, comm_, &request);
    SG_CHECK(code == MPI_SUCCESS, "broadcast: rank {} with {}: MPI failed: {}", rank_,
             describe(tensor), mpi_error_string(code));
    wait_for(request, fmt::format("broadcast on rank {} with {}", rank_, describe(tensor)),
             options_.timeout);
    mark_written(tensor);
  }

  void barrier() override {
    if (size_ == 1) return;
    MPI_Request request = MPI_REQUEST_NULL;
    const int code = MPI_Ibarrier(comm_, &request);
    SG_CHECK(code == MPI_SUCCESS, "barrier: rank {}: MPI failed: {}", rank_,
             mpi_error_string(code));
    wait_for(request, fmt::format("barrier on rank {}", rank_), options_.timeout);
  }

 private:
  // What MPI and NCCL can take: a defined, contiguous float32/float64 tensor with an int count.
  // Returns the error for anything else (empty when fine); check_same_on_all_ranks throws it on
  // this rank and a matching one on the others.
  std::string refusal(const char* op, const Tensor& tensor) const {
    if (!tensor.defined()) return fmt::format("{}: rank {}: the tensor is undefined", op, rank_);
    if (tensor.dtype() != kFloat32 && tensor.dtype() != kFloat64) {
      return fmt::format("{}: rank {}: {} is not supported (float32 and float64 are)", op, rank_,
                         describe(tensor));
    }
    if (!tensor.is_contiguous()) {
      return fmt::format(
          "{}: rank {}: the tensor ({}) is not contiguous; collectives work in place on "
          "contiguous memory (call .contiguous() and copy the result back)",
          op, rank_, describe(tensor));
    }
    if (tensor.numel() > INT32_MAX) {
      return fmt::format("{}: rank {}: {} has more than 2^31-1 elements", op, rank_,
                         describe(tensor));
    }
    return "";
  }

#if SCRATCHGRAD_HAS_NCCL
  NcclCommunicator& nccl_for(const Tensor& tensor, const char* op) {
    if (!nccl_ || nccl_->device() != tensor.device().index) {
      SG_CHECK(!nccl_,
               "{}: rank {}: {} is on another GPU than this rank's earlier collectives "
               "(cuda:{}); one rank drives one GPU",
               op, rank_, describe(tensor), nccl_->device());
      nccl_ = std::make_unique<NcclCommunicator>(comm_, tensor.device().index, options_.timeout);
    }
    return *nccl_;
  }
  std::unique_ptr<NcclCommunicator> nccl_;
#else
  struct NoNccl {
    void all_reduce(const Tensor&, ReduceOp) {}
    void broadcast(const Tensor&, int) {}
  };
  NoNccl nccl_for(const Tensor& tensor, const char* op) const {
    SG_FAIL(
        "{}: rank {}: {} is a CUDA tensor, but this build has no NCCL (build with "
        "-DSCRATCHGRAD_CUDA=ON where nccl.h and libnccl are installed)",
        op, rank_, describe(tensor));
  }
#endif

  ProcessGroupOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

void finalize_at_exit() {
  {
    std::lock_guard lock(group_mutex);
    the_group.reset();  // its communicators go before MPI does
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (we_initialised_mpi && !finalized) MPI_Finalize();
}

}  // namespace

std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options) {
  std::lock_guard lock(group_mutex);
  if (the_group) return the_group;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    // FUNNELED: only the thread that calls backward (and so the hooks) talks to MPI.
    int provided = 0;
    const int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    SG_CHECK(code == MPI_SUCCESS, "init_process_group: MPI_Init_thread failed: {}",
             mpi_error_string(code));
    we_initialised_mpi = true;
    std::atexit(finalize_at_exit);
  }
  the_group = std::make_shared<MpiProcessGroup>(options);
  return the_group;
}

bool is_initialized() {
  std::lock_guard lock(group_mutex);
  return the_group != nullptr;
}

std::shared_ptr<ProcessGroup> default_group() {
  std::lock_guard lock(group_mutex);
  SG_CHECK(the_group, "distributed: no process group yet; call init_process_group() first");
  return the_group;
}

bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

void abort_job(int exit_code) {
  int initialised = 0, finalized = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalized);
  if (initialised && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

void destroy_process_group() { finalize_at_exit(); }

}  // namespace sg::distributed
