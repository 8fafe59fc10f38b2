// All-reduce and all-gather through memory shared by the ranks of one machine. Open MPI moves a
// message between two processes on one machine through small shared buffers, copying it in and out
// in fragments, with a handshake per fragment; here each rank maps the other ranks' staging areas
// and reads their data directly, so the bytes cross memory about as often as one copy would.
//
// The tensor goes in slices of kSliceBytes (small enough that the staging areas stay in cache).
// Each slice is cut into N parts, part q belonging to rank q; a slice of an all-reduce takes
//   1. every rank copies the parts it does not own into its staging area;   then a barrier,
//   2. rank q adds part q over all ranks, in rank order (its own part straight from its tensor),
//      and writes the sum into its tensor and its result area;              then a barrier,
//   3. every rank copies the other ranks' summed parts from their result areas into its tensor:
// a reduce-scatter, then an all-gather, as in a ring all-reduce, but each piece summed once, by its
// owner, so every rank ends with the same bits. The staging and result areas alternate between two
// sets from slice to slice, so a slice's copies never wait for the previous slice's readers.
//
// The barriers are counters in the shared memory (each rank raises its own, then waits until every
// other has reached the same count), so no MPI call sits between the copies. A collective is
// started by all_reduce/all_gather and moved forward by progress(), which never waits for another
// rank: DataParallel calls it between the layers of backward, as it does for MPI's requests.
// Collectives run one after the other in the order they were started, which is the same on every
// rank. The shared memory itself comes from MPI (MPI_Win_allocate_shared), which frees it even when
// a job is killed.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "distributed/process_group.h"

namespace sg::distributed {

class SharedMemoryCollectives {
 public:
  // Bytes of tensor data per slice: staging and result areas of 2 sets x 2 x kSliceBytes per rank.
  static constexpr int64_t kSliceBytes = int64_t{1} << 20;

  // Collective over `comm`, every rank of which must share this machine's memory. `timeout`: how
  // long a wait may last before it fails naming the collective (a rank that died or hangs).
  SharedMemoryCollectives(MPI_Comm comm, std::chrono::milliseconds timeout);
  ~SharedMemoryCollectives();
  SharedMemoryCollectives(const SharedMemoryCollectives&) = delete;
  SharedMemoryCollectives& operator=(const SharedMemoryCollectives&) = delete;

  // Starts an all-reduce of a contiguous CPU tensor (float32, float64: Sum or Average; int64: Sum)
  // in place. `what` names it in errors ("all_reduce on rank 0 with float32 [8] on cpu").
  std::unique_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op, std::string what);
  // Starts an all-gather: rank r's `input` (n elements) lands at [r·n, (r+1)·n) of every rank's
  // `output` (contiguous, N·n elements, the same dtype; any dtype).
  std::unique_ptr<Work> all_gather(const Tensor& output, const Tensor& input, std::string what);
  // Moves the started collectives forward as far as they go without waiting for another rank.
  void progress();

 private:
  struct Collective;
  class SharedMemoryWork;
  // One rank's shared segment: its barrier counter, then its staging and result areas.
  struct Segment {
    std::atomic<uint64_t>* arrived;
    char* staging[2];
    char* result[2];
  };

  bool advance(Collective& c);  // false: blocked at a barrier
  void arrive();                // raises this rank's counter: the next barrier
  bool all_arrived() const;     // every rank's counter has reached this rank's
  void wait(Collective& c);     // progress() until c is done, or the timeout

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Win window_ = MPI_WIN_NULL;
  int rank_ = 0, size_ = 1;
  std::chrono::milliseconds timeout_;
  std::vector<Segment> segments_;  // every rank's segment, mapped into this process
  uint64_t barriers_ = 0;          // barriers this rank has arrived at
  uint64_t slices_ = 0;            // slices done, over all collectives: picks the area set
  std::deque<std::shared_ptr<Collective>> queue_;
  std::string failed_;  // a collective timed out: the ranks are out of step, so every later fails
};

}  // namespace sg::distributed
