#include "distributed/process_group.h"

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "autograd/error.h"
#include "autograd/grad_mode.h"
#include "autograd/storage.h"
#include "distributed/collective_check.h"
#include "distributed/mpi_wait.h"
#include "distributed/shared_memory_collectives.h"
#if SCRATCHGRAD_HAS_NCCL
#include "distributed/nccl_communicator.h"
#endif

namespace sg::distributed {

namespace {

std::mutex group_mutex;
std::shared_ptr<ProcessGroup> the_group;
bool we_initialised_mpi = false;

MPI_Datatype mpi_type_of(DType dtype) {
  switch (dtype) {
    case kFloat64:
      return MPI_DOUBLE;
    case kInt64:
      return MPI_INT64_T;
    case kBool:
      return MPI_UINT8_T;  // a copy (broadcast, all-gather), never a sum
    default:
      return MPI_FLOAT;
  }
}

// What this rank asks for: ProcessGroupOptions::shared_memory, unless SCRATCHGRAD_SHARED_MEMORY=0
// turns it off (1 or unset leaves it); nothing for another value, an error once every rank knows.
std::optional<bool> shared_memory_wanted(bool option) {
  const char* env = std::getenv("SCRATCHGRAD_SHARED_MEMORY");
  if (env == nullptr || std::strcmp(env, "") == 0 || std::strcmp(env, "1") == 0) return option;
  if (std::strcmp(env, "0") == 0) return false;
  return std::nullopt;
}

// Whether the ranks of `comm` use shared memory: every rank on this machine, and every rank
// asking for it. Making the shared window is a collective, so the ranks agree first, and all of
// them stop together if they do not: one rank with SCRATCHGRAD_SHARED_MEMORY=0 among others
// without it used to take the other path alone, and the job crashed inside MPI.
bool every_rank_shares_memory(MPI_Comm comm, int rank, int size, int local_size, bool option) {
  const std::optional<bool> wanted = shared_memory_wanted(option);
  const int mine = wanted ? static_cast<int>(*wanted) : 2;
  std::vector<int> all(static_cast<size_t>(size));
  const int code = MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm);
  SG_CHECK(code == MPI_SUCCESS, "init_process_group: MPI failed: {}", mpi_error_string(code));
  for (int r = 0; r < size; ++r) {
    const int theirs = all[static_cast<size_t>(r)];
    SG_CHECK(theirs != 2, "init_process_group: SCRATCHGRAD_SHARED_MEMORY must be 0 or 1, {}",
             r == rank ? fmt::format("got '{}'", excerpt(std::getenv("SCRATCHGRAD_SHARED_MEMORY")))
                       : fmt::format("and rank {} has another value", r));
    SG_CHECK(theirs == all[0],
             "init_process_group: rank 0 {} shared memory and rank {} {}: set "
             "SCRATCHGRAD_SHARED_MEMORY (and ProcessGroupOptions::shared_memory) alike on every "
             "rank",
             all[0] ? "uses" : "does not use", r, theirs ? "does" : "does not");
  }
  return mine == 1 && size > 1 && local_size == size;
}

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
    int local_size = 1;
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    try {
      if (every_rank_shares_memory(comm_, rank_, size_, local_size, options.shared_memory))
        shared_ = std::make_unique<SharedMemoryCollectives>(comm_, options_.timeout);
    } catch (...) {
      MPI_Comm_free(&comm_);  // no destructor runs for a constructor that throws
      throw;
    }
  }

  ~MpiProcessGroup() override {
    shared_.reset();  // its window goes before the communicator it was made on
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string backend_name(Device device) const override {
    if (device.is_cuda()) return "nccl";
    return shared_ ? "shm" : "mpi";
  }

  void all_reduce(const Tensor& tensor, ReduceOp op) override {
    all_reduce_async(tensor, op)->wait();
  }

  std::unique_ptr<Work> all_reduce_async(const Tensor& tensor, ReduceOp op) override {
    check_same_on_all_ranks(comm_, "all_reduce", tensor, -1, static_cast<int>(op),
                            refusal("all_reduce", tensor, op), options_.timeout, meanwhile());
    // CUDA tensors go through NCCL even alone (a communicator of one): the GPU path is the same
    // on one GPU as on many.
    if (tensor.device().is_cuda()) {
      nccl_for(tensor, "all_reduce").all_reduce(tensor, op);
      return std::make_unique<DoneWork>();
    }
    if (size_ == 1) return std::make_unique<DoneWork>();
    std::string what = fmt::format("all_reduce on rank {} with {}", rank_, describe(tensor));
    if (shared_) return shared_->all_reduce(tensor, op, std::move(what));
    MPI_Request request = MPI_REQUEST_NULL;
    const int code =
        MPI_Iallreduce(MPI_IN_PLACE, tensor.raw_data(), static_cast<int>(tensor.numel()),
                       mpi_type_of(tensor.dtype()), MPI_SUM, comm_, &request);
    SG_CHECK(code == MPI_SUCCESS, "all_reduce: rank {} with {}: MPI failed: {}", rank_,
             describe(tensor), mpi_error_string(code));
    return std::make_unique<MpiWork>(tensor, request, op, size_, std::move(what), options_.timeout);
  }

  void broadcast(const Tensor& tensor, int root) override {
    SG_CHECK(root >= 0 && root < size_, "broadcast: root {} is not a rank of this group of {}",
             root, size_);
    check_same_on_all_ranks(comm_, "broadcast", tensor, root, 0, refusal("broadcast", tensor),
                            options_.timeout, meanwhile());
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
             options_.timeout, meanwhile());
    mark_written(tensor);
  }

  void all_gather_into(const Tensor& output, const Tensor& input) override {
    std::string refused = refusal("all_gather_into", input);
    if (refused.empty()) refused = output_refusal(output, input);
    check_same_on_all_ranks(comm_, "all_gather_into", input, -1, 0, refused, options_.timeout,
                            meanwhile());
    if (input.device().is_cuda()) {
      nccl_for(input, "all_gather_into").all_gather(output, input);
      return;
    }
    std::string what = fmt::format("all_gather_into on rank {} with {}", rank_, describe(input));
    if (size_ == 1) {
      std::memcpy(output.raw_data(), input.raw_data(),
                  static_cast<size_t>(input.numel()) * dtype_size(input.dtype()));
    } else if (shared_) {
      shared_->all_gather(output, input, std::move(what))->wait();
    } else {
      MPI_Request request = MPI_REQUEST_NULL;
      const int n = static_cast<int>(input.numel());
      const MPI_Datatype type = mpi_type_of(input.dtype());
      const int code =
          MPI_Iallgather(input.raw_data(), n, type, output.raw_data(), n, type, comm_, &request);
      SG_CHECK(code == MPI_SUCCESS, "{}: MPI failed: {}", what, mpi_error_string(code));
      wait_for(request, what, options_.timeout);
    }
    mark_written(output);
  }

  void barrier() override {
    if (size_ == 1) return;
    MPI_Request request = MPI_REQUEST_NULL;
    const int code = MPI_Ibarrier(comm_, &request);
    SG_CHECK(code == MPI_SUCCESS, "barrier: rank {}: MPI failed: {}", rank_,
             mpi_error_string(code));
    wait_for(request, fmt::format("barrier on rank {}", rank_), options_.timeout, meanwhile());
  }

 private:
  // While a wait for MPI spins: the shared-memory collectives this rank has started move on, so
  // that a rank waiting here never holds up one that waits there for this rank's part.
  std::function<void()> meanwhile() {
    if (!shared_) return {};
    return [this] { shared_->progress(); };
  }

  // What the transports can take: a defined, contiguous tensor with an int count, of a dtype the
  // operation supports (sums: float32, float64, int64, and an average only of floats; copies:
  // bool too). Returns the error for anything else (empty when fine); check_same_on_all_ranks
  // throws it on this rank and a matching one on the others.
  std::string refusal(const char* op, const Tensor& tensor,
                      std::optional<ReduceOp> reduce = std::nullopt) const {
    if (!tensor.defined()) return fmt::format("{}: rank {}: the tensor is undefined", op, rank_);
    const DType d = tensor.dtype();
    if (d != kFloat32 && d != kFloat64 && d != kInt64 && (reduce || d != kBool)) {
      return fmt::format("{}: rank {}: {} is not supported (float32, float64 and int64 are{})", op,
                         rank_, describe(tensor), reduce ? "" : ", and bool");
    }
    if (reduce == ReduceOp::Average && d == kInt64) {
      return fmt::format(
          "{}: rank {}: {} cannot be averaged (the mean of integers is not an integer); sum it "
          "and divide, or convert it to float64",
          op, rank_, describe(tensor));
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

  // An all-gather's output: N times the input's elements, its dtype and device, contiguous.
  std::string output_refusal(const Tensor& output, const Tensor& input) const {
    if (output.defined() && output.dtype() == input.dtype() && output.device() == input.device() &&
        output.is_contiguous() && output.numel() == input.numel() * size_) {
      return "";
    }
    return fmt::format(
        "all_gather_into: rank {}: the output ({}) must be a contiguous {} tensor on {} of {} "
        "elements: the input's {} times the {} ranks",
        rank_, output.defined() ? describe(output) : "undefined", input.dtype(),
        input.device().str(), input.numel() * size_, input.numel(), size_);
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
    void all_gather(const Tensor&, const Tensor&) {}
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
  std::unique_ptr<SharedMemoryCollectives> shared_;  // every rank on this machine
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

void initialise_mpi() {
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
}

}  // namespace

std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options) {
  std::lock_guard lock(group_mutex);
  if (the_group) return the_group;
  initialise_mpi();
  the_group = std::make_shared<MpiProcessGroup>(options);
  return the_group;
}

std::shared_ptr<ProcessGroup> new_group(const ProcessGroupOptions& options) {
  std::lock_guard lock(group_mutex);
  SG_CHECK(the_group, "new_group: no process group yet; call init_process_group() first");
  return std::make_shared<MpiProcessGroup>(options);
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
