#include "autograd/backend/cuda/allocator.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "autograd/backend/cuda/cuda_check.h"

namespace sg::cuda {

void* CachingAllocator::allocate(size_t nbytes) {
  const size_t size = bucket_size(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.allocations;
  void* ptr = nullptr;
  auto it = free_blocks_.find(size);
  if (it != free_blocks_.end() && !it->second.empty()) {
    ptr = it->second.back();
    it->second.pop_back();
    ++stats_.cache_hits;
  } else {
    cudaError_t status = cudaMalloc(&ptr, size);
    if (status == cudaErrorMemoryAllocation) {
      // Blocks cached for other sizes may be what is missing: give them back and try again.
      cudaGetLastError();  // clear the error so it does not surface at the next launch
      release_cached_blocks();
      status = cudaMalloc(&ptr, size);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      SG_FAIL(
          "cuda:{}: out of memory allocating {} bytes ({} bytes are in use by scratchgrad's "
          "tensors): {}",
          device_, nbytes, stats_.allocated_bytes, cudaGetErrorString(status));
    }
    ++stats_.cuda_mallocs;
    stats_.reserved_bytes += static_cast<int64_t>(size);
  }
  live_blocks_.emplace(ptr, size);
  stats_.allocated_bytes += static_cast<int64_t>(size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) noexcept {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_blocks_.find(ptr);
  if (it == live_blocks_.end()) return;  // not ours: nothing sensible to do in a destructor
  const size_t size = it->second;
  live_blocks_.erase(it);
  stats_.allocated_bytes -= static_cast<int64_t>(size);
  try {
    free_blocks_[size].push_back(ptr);
  } catch (...) {
    // Out of host memory for the list: drop the block from the cache (leaked until exit).
    stats_.reserved_bytes -= static_cast<int64_t>(size);
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_blocks();
}

void CachingAllocator::release_cached_blocks() {
  // Off the lists first, so that a failing cudaFree never leaves a freed block listed.
  std::unordered_map<size_t, std::vector<void*>> blocks_by_size;
  blocks_by_size.swap(free_blocks_);
  for (auto& [size, blocks] : blocks_by_size) {
    for (void* ptr : blocks) {
      stats_.reserved_bytes -= static_cast<int64_t>(size);
      SG_CUDA_CHECK(cudaFree(ptr));  // waits for the device: nothing still reads the block
    }
  }
}

CudaMemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace sg::cuda
