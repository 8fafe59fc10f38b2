#include "autograd/backend/cuda/staging.h"

#include <cstring>

#include "autograd/backend/cuda/cuda_check.h"

namespace sg::cuda {

namespace {

size_t buffer_size(size_t nbytes) {
  size_t size = StagingPool::kMinBuffer;
  while (size < nbytes) size *= 2;
  return size;
}

// Whether the GPU has passed `event` (an event never recorded counts as passed).
bool has_completed(cudaEvent_t event) {
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaErrorNotReady) {
    // "Not yet" is an answer, not an error; clear it so that no later launch check reports it.
    cudaGetLastError();
    return false;
  }
  SG_CUDA_CHECK(status);
  return true;
}

}  // namespace

void StagingPool::upload(void* dst, const void* host_src, size_t nbytes, cudaStream_t stream) {
  if (nbytes > kMaxStagedUpload) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.synchronous_uploads;
    }
    SG_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, nbytes, cudaMemcpyHostToDevice, stream));
    SG_CUDA_CHECK(cudaStreamSynchronize(stream));  // host_src may go once this returns
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const Buffer buffer = take(buffer_size(nbytes));
  if (buffer.host == nullptr) {
    ++stats_.synchronous_uploads;
    SG_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, nbytes, cudaMemcpyHostToDevice, stream));
    SG_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  // The caller's buffer may change or be freed as soon as we return, long before the GPU runs
  // the copy: take the bytes now. The asynchronous copy reads the pinned copy instead.
  std::memcpy(buffer.host, host_src, nbytes);
  SG_CUDA_CHECK(cudaMemcpyAsync(dst, buffer.host, nbytes, cudaMemcpyHostToDevice, stream));
  SG_CUDA_CHECK(cudaEventRecord(buffer.copied, stream));
  ++stats_.staged_uploads;
}

StagingPool::Buffer StagingPool::take(size_t size) {
  std::deque<Buffer>& ring = rings_[size];
  // One stream finishes the copies in order: if the oldest buffer is still busy, all are.
  const bool oldest_free = !ring.empty() && has_completed(ring.front().copied);
  const bool may_grow = ring.size() < kMaxBuffersPerSize &&
                        static_cast<size_t>(stats_.pinned_bytes) + size <= kMaxPinnedBytes;
  if (!oldest_free && may_grow) {
    Buffer fresh;
    SG_CUDA_CHECK(cudaHostAlloc(&fresh.host, size, cudaHostAllocDefault));
    // Timing off: the event only marks a point in the stream, which makes it cheaper.
    const cudaError_t status = cudaEventCreateWithFlags(&fresh.copied, cudaEventDisableTiming);
    if (status != cudaSuccess) cudaFreeHost(fresh.host);
    SG_CUDA_CHECK(status);
    ring.push_back(fresh);
    ++stats_.buffers;
    stats_.pinned_bytes += static_cast<int64_t>(size);
    return fresh;
  }
  if (ring.empty()) return Buffer{};  // the pool is full and has nothing of this size to wait for
  Buffer oldest = ring.front();
  if (!oldest_free) {
    ++stats_.waits;
    SG_CUDA_CHECK(cudaEventSynchronize(oldest.copied));
  }
  ring.pop_front();
  ring.push_back(oldest);
  return oldest;
}

CudaStagingStats StagingPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace sg::cuda
