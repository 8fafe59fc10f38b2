// StagingPool: host-to-device uploads that do not make the host wait for the GPU.
//
// cudaMemcpy from ordinary (pageable) host memory waits for all the work queued before it ("for
// transfers from pageable host memory to device memory, a stream sync is performed before the
// copy is initiated", CUDA Runtime API, API synchronization behavior): the GPU's DMA engine reads
// only page-locked memory, so the driver stages pageable bytes itself. An upload of each training
// batch would then stop the host until the GPU had run the previous step.
//
// So the backend stages the bytes itself: memcpy into a pinned (page-locked) buffer of the pool,
// cudaMemcpyAsync from there on the default stream (where every kernel runs), and a cudaEvent
// recorded after the copy. The call returns at once; the copy runs in stream order, after the
// kernels queued before it and before those queued after it. The memcpy is what makes this
// correct: the caller may overwrite or free its buffer as soon as upload() returns, while the
// GPU has not read a byte yet; it reads the pool's copy instead.
//
// A staging buffer is reused only once its event has completed, i.e. the GPU has copied out of
// it. Buffers come in power-of-two sizes (4 KiB and up), and each size keeps its buffers in a
// ring, in the order of their copies; one stream runs the copies in that order, so the oldest
// buffer is the first to be free and is the only one to look at. When it is still busy, the pool
// allocates another buffer, up to a bound, and past the bound waits for the oldest one.
// Uploads over 64 MiB, or a new size when the pool is full, use the synchronous cudaMemcpy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>

namespace sg {

// What one device's staging pool has done (for tests and benchmarks).
struct CudaStagingStats {
  int64_t staged_uploads = 0;       // uploads through a pinned buffer: the host did not wait
  int64_t synchronous_uploads = 0;  // uploads by plain cudaMemcpy (too large, or the pool full)
  int64_t waits = 0;                // staged uploads that had to wait for a busy buffer
  int64_t buffers = 0;              // pinned buffers held
  int64_t pinned_bytes = 0;         // their total size
};

namespace cuda {

class StagingPool {
 public:
  static constexpr size_t kMinBuffer = size_t{4} << 10;         // 4 KiB: a batch of tokens
  static constexpr size_t kMaxStagedUpload = size_t{64} << 20;  // larger: synchronous
  static constexpr size_t kMaxPinnedBytes = size_t{256} << 20;  // all buffers together
  static constexpr size_t kMaxBuffersPerSize = 64;              // uploads in flight, per size

  StagingPool() = default;
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  // No destructor: the backend that owns the pool lives until the process exits, and the CUDA
  // runtime may be gone before static destructors run (cuda_backend.cu).

  // Queues the copy of host_src's nbytes to the device pointer dst on `stream`. The caller has
  // made the device current. host_src may change or be freed once this returns.
  void upload(void* dst, const void* host_src, size_t nbytes, cudaStream_t stream);
  CudaStagingStats stats() const;

 private:
  struct Buffer {
    void* host = nullptr;          // pinned, `size` bytes
    cudaEvent_t copied = nullptr;  // recorded after the last copy out of it
  };
  // A buffer of `size` bytes that no queued copy reads any more, already moved to the back of its
  // ring (the newest); one with host == nullptr when the pool is full and has no buffer of that
  // size. With mutex_ held.
  Buffer take(size_t size);

  mutable std::mutex mutex_;  // held for a whole upload: the rings stay in the stream's order
  std::map<size_t, std::deque<Buffer>> rings_;  // size -> its buffers, oldest copy first
  CudaStagingStats stats_;
};

}  // namespace cuda
}  // namespace sg
