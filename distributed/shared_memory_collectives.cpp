#include "distributed/shared_memory_collectives.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <thread>

#include "autograd/error.h"
#include "autograd/storage.h"
#include "distributed/mpi_wait.h"

namespace sg::distributed {

namespace {

// The counter has a cache line of its own; the areas start on a page.
constexpr int64_t kHeaderBytes = 4096;
constexpr int64_t kSegmentBytes = kHeaderBytes + 4 * SharedMemoryCollectives::kSliceBytes;
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "the barrier counters are shared between processes: they must be lock-free");

// Adds `sources` element by element in rank order, divides by `divisor` when asked, and writes the
// result to `out` and `shared_out`. `out` may be one of the sources: each block is read in full
// (into a local array the compiler knows nothing else points to, so the loops vectorise) before
// it is written. Integers add as unsigned (wrapping, as MPI's sums do, never undefined).
template <typename T>
void sum_in_rank_order(const std::vector<const char*>& sources, char* out, char* shared_out,
                       int64_t count, bool divide, T divisor) {
  constexpr int64_t kBlock = 2048;  // stays in L1
  T acc[kBlock];
  auto source = [&](size_t q) { return reinterpret_cast<const T*>(sources[q]); };
  for (int64_t start = 0; start < count; start += kBlock) {
    const int64_t n = std::min(kBlock, count - start);
    const T* first = source(0) + start;
    if (sources.size() == 1) {
      for (int64_t i = 0; i < n; ++i) acc[i] = first[i];
    } else {
      const T* second = source(1) + start;
      for (int64_t i = 0; i < n; ++i) acc[i] = first[i] + second[i];
    }
    for (size_t q = 2; q < sources.size(); ++q) {
      const T* next = source(q) + start;
      for (int64_t i = 0; i < n; ++i) acc[i] += next[i];
    }
    if (divide) {
      for (int64_t i = 0; i < n; ++i) acc[i] /= divisor;
    }
    const size_t bytes = static_cast<size_t>(n) * sizeof(T);
    std::memcpy(out + start * static_cast<int64_t>(sizeof(T)), acc, bytes);
    std::memcpy(shared_out + start * static_cast<int64_t>(sizeof(T)), acc, bytes);
  }
}

// sum_in_rank_order for a tensor's dtype: float32, float64 (a sum or an average) or int64 (a sum:
// the group refuses an int64 average).
void sum_part(DType dtype, const std::vector<const char*>& sources, char* out, char* shared_out,
              int64_t count, bool average, int ranks) {
  switch (dtype) {
    case kFloat32:
      return sum_in_rank_order<float>(sources, out, shared_out, count, average,
                                      static_cast<float>(ranks));
    case kFloat64:
      return sum_in_rank_order<double>(sources, out, shared_out, count, average,
                                       static_cast<double>(ranks));
    case kInt64:
      return sum_in_rank_order<uint64_t>(sources, out, shared_out, count, false, 1);
    default:
      SG_FAIL("all_reduce: {} cannot be summed", dtype);
  }
}

}  // namespace

struct SharedMemoryCollectives::Collective {
  bool gather = false;  // all-gather; else all-reduce
  Tensor data;          // the tensor reduced in place, or the all-gather's output
  Tensor input;         // the all-gather's input
  ReduceOp op = ReduceOp::Sum;
  int64_t numel = 0;      // elements reduced, or gathered from each rank
  int64_t item = 0;       // bytes per element
  int64_t per_slice = 0;  // elements per slice
  int64_t slice = 0;      // the slice in progress
  int step = 0;           // its next step: 0 copy in, 1 and 2 after a barrier
  bool done = false;
  std::string what;
  int64_t slices() const { return (numel + per_slice - 1) / per_slice; }
};

class SharedMemoryCollectives::SharedMemoryWork final : public Work {
 public:
  SharedMemoryWork(SharedMemoryCollectives& owner, std::shared_ptr<Collective> collective)
      : owner_(owner), collective_(std::move(collective)) {}
  // Dropping an unfinished collective leaves it queued: it holds its tensors, and the next wait
  // of this group finishes it (every rank must still do its part).
  void wait() override { owner_.wait(*collective_); }
  void progress() override { owner_.progress(); }

 private:
  SharedMemoryCollectives& owner_;
  std::shared_ptr<Collective> collective_;
};

SharedMemoryCollectives::SharedMemoryCollectives(MPI_Comm comm, std::chrono::milliseconds timeout)
    : comm_(comm), timeout_(timeout) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Info info = MPI_INFO_NULL;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each rank's segment on its own pages
  void* mine = nullptr;
  const int code = MPI_Win_allocate_shared(kSegmentBytes, 1, info, comm_, &mine, &window_);
  MPI_Info_free(&info);
  SG_CHECK(code == MPI_SUCCESS,
           "process group: rank {}: no shared memory for collectives ({}): MPI failed: {} (too "
           "little space in /dev/shm? SCRATCHGRAD_SHARED_MEMORY=0 goes through MPI's messages "
           "instead)",
           rank_, kSegmentBytes, mpi_error_string(code));
  new (mine) std::atomic<uint64_t>(0);
  segments_.resize(static_cast<size_t>(size_));
  for (int q = 0; q < size_; ++q) {
    MPI_Aint bytes = 0;
    int unit = 0;
    char* base = nullptr;
    MPI_Win_shared_query(window_, q, &bytes, &unit, &base);
    Segment& s = segments_[static_cast<size_t>(q)];
    s.arrived = reinterpret_cast<std::atomic<uint64_t>*>(base);
    for (int set = 0; set < 2; ++set) {
      s.staging[set] = base + kHeaderBytes + set * kSliceBytes;
      s.result[set] = base + kHeaderBytes + (2 + set) * kSliceBytes;
    }
  }
  MPI_Barrier(comm_);  // every counter is initialised before any rank reads one
}

SharedMemoryCollectives::~SharedMemoryCollectives() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
}

std::unique_ptr<Work> SharedMemoryCollectives::all_reduce(const Tensor& tensor, ReduceOp op,
                                                          std::string what) {
  auto c = std::make_shared<Collective>();
  c->data = tensor;
  c->op = op;
  c->numel = tensor.numel();
  c->item = static_cast<int64_t>(dtype_size(tensor.dtype()));
  c->per_slice = kSliceBytes / c->item;
  c->what = std::move(what);
  queue_.push_back(c);
  progress();  // copies in the first slice at once, if nothing is ahead of it
  return std::make_unique<SharedMemoryWork>(*this, std::move(c));
}

std::unique_ptr<Work> SharedMemoryCollectives::all_gather(const Tensor& output, const Tensor& input,
                                                          std::string what) {
  auto c = std::make_shared<Collective>();
  c->gather = true;
  c->data = output;
  c->input = input;
  c->numel = input.numel();
  c->item = static_cast<int64_t>(dtype_size(input.dtype()));
  c->per_slice = kSliceBytes / c->item;
  c->what = std::move(what);
  queue_.push_back(c);
  progress();
  return std::make_unique<SharedMemoryWork>(*this, std::move(c));
}

void SharedMemoryCollectives::arrive() {
  segments_[static_cast<size_t>(rank_)].arrived->store(++barriers_, std::memory_order_release);
}

bool SharedMemoryCollectives::all_arrived() const {
  // Acquire: what a rank wrote before raising its counter is visible once we have seen it raised.
  return std::all_of(segments_.begin(), segments_.end(), [&](const Segment& s) {
    return s.arrived->load(std::memory_order_acquire) >= barriers_;
  });
}

bool SharedMemoryCollectives::advance(Collective& c) {
  char* data = static_cast<char*>(c.data.raw_data());
  while (c.slice < c.slices()) {
    const int64_t first = c.slice * c.per_slice;
    const int64_t count = std::min(c.per_slice, c.numel - first);
    const int set = static_cast<int>(slices_ % 2);
    Segment& me = segments_[static_cast<size_t>(rank_)];
    if (c.gather) {
      const char* in = static_cast<const char*>(c.input.raw_data()) + first * c.item;
      if (c.step == 0) {
        std::memcpy(me.staging[set], in, static_cast<size_t>(count * c.item));
        arrive();
        c.step = 1;
      }
      if (!all_arrived()) return false;
      for (int q = 0; q < size_; ++q) {
        const char* from = q == rank_ ? in : segments_[static_cast<size_t>(q)].staging[set];
        std::memcpy(data + (q * c.numel + first) * c.item, from,
                    static_cast<size_t>(count * c.item));
      }
    } else {
      // --8<-- [start:all_reduce_slice]
      char* slice = data + first * c.item;
      // Part q of the slice: elements [q·count/N, (q+1)·count/N), summed by rank q.
      auto lo = [&](int q) { return q * count / size_ * c.item; };
      auto bytes = [&](int q) { return static_cast<size_t>(lo(q + 1) - lo(q)); };
      if (c.step == 0) {  // 1. the parts other ranks sum, into this rank's staging area
        for (int q = 0; q < size_; ++q) {
          if (q != rank_) std::memcpy(me.staging[set] + lo(q), slice + lo(q), bytes(q));
        }
        arrive();
        c.step = 1;
      }
      if (c.step == 1) {  // 2. this rank's part, summed over all ranks in rank order
        if (!all_arrived()) return false;
        std::vector<const char*> sources;
        for (int q = 0; q < size_; ++q) {
          sources.push_back((q == rank_ ? slice : segments_[static_cast<size_t>(q)].staging[set]) +
                            lo(rank_));
        }
        sum_part(c.data.dtype(), sources, slice + lo(rank_), me.result[set] + lo(rank_),
                 (lo(rank_ + 1) - lo(rank_)) / c.item, c.op == ReduceOp::Average, size_);
        arrive();
        c.step = 2;
      }
      if (!all_arrived()) return false;  // 3. the other ranks' sums, into this rank's tensor
      for (int q = 0; q < size_; ++q) {
        if (q != rank_) {
          std::memcpy(slice + lo(q), segments_[static_cast<size_t>(q)].result[set] + lo(q),
                      bytes(q));
        }
      }
      // --8<-- [end:all_reduce_slice]
    }
    c.step = 0;
    ++c.slice;
    ++slices_;
  }
  c.done = true;
  c.data.impl()->storage->bump_version();  // tensors that saved it for backward see the change
  return true;
}

void SharedMemoryCollectives::progress() {
  while (failed_.empty() && !queue_.empty()) {
    if (!advance(*queue_.front())) return;
    queue_.pop_front();
  }
}

void SharedMemoryCollectives::wait(Collective& c) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (int64_t polls = 0;; ++polls) {
    SG_CHECK(failed_.empty(), "{}: an earlier collective of this group failed ({})", c.what,
             failed_);
    progress();
    if (c.done) return;
    if (Clock::now() - start >= timeout_) {
      failed_ = c.what + " timed out";
      SG_FAIL(
          "{}: timed out after {:.1f} s waiting for the other ranks (one of them died, hangs, or "
          "called a different sequence of collectives)",
          c.what, std::chrono::duration<double>(timeout_).count());
    }
    // As mpi_wait.cpp: spin first, then yield the core to a rank that may share it.
    if (polls >= 1000) std::this_thread::yield();
  }
}

}  // namespace sg::distributed
