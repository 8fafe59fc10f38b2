#include "autograd/backend/cuda/allocator.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "autograd/backend/cuda/cuda_check.h"

namespace sg::cuda {

void* CachingAllocator::take(FreeLists& lists, size_t size) {
  auto it = lists.find(size);
  if (it == lists.end() || it->second.empty()) return nullptr;
  void* ptr = it->second.back();
  it->second.pop_back();
  return ptr;
}

void* CachingAllocator::allocate(size_t nbytes, bool untouched) {
  const size_t size = bucket_size(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.allocations;
  const bool capturing = capturing_pool_ != 0;
  // A capture takes its own pool's blocks first, then free blocks of the general cache (no kernel
  // queued after this point reads them any more, and the graph has not used them: what it frees
  // goes to its pool), which become the pool's.
  void* ptr = capturing && !untouched ? take(graph_pools_[capturing_pool_], size) : nullptr;
  if (ptr == nullptr) ptr = take(free_blocks_, size);
  if (ptr != nullptr) {
    ++stats_.cache_hits;
  } else {
    cudaError_t status = cudaMalloc(&ptr, size);
    if (status == cudaErrorMemoryAllocation && !capturing) {  // no cudaFree inside a capture
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
  live_blocks_.emplace(ptr, LiveBlock{size, capturing_pool_});
  stats_.allocated_bytes += static_cast<int64_t>(size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) noexcept {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_blocks_.find(ptr);
  if (it == live_blocks_.end()) return;  // not ours: nothing sensible to do in a destructor
  const size_t size = it->second.size;
  // Freed during a capture: the graph may have used it before the free, so it stays out of the
  // general cache while the graph lives, whoever allocated it.
  const auto pool = graph_pools_.find(capturing_pool_ != 0 ? capturing_pool_ : it->second.pool);
  live_blocks_.erase(it);
  stats_.allocated_bytes -= static_cast<int64_t>(size);
  try {
    (pool != graph_pools_.end() ? pool->second : free_blocks_)[size].push_back(ptr);
  } catch (...) {
    // Out of host memory for the list: drop the block from the cache (leaked until exit).
    stats_.reserved_bytes -= static_cast<int64_t>(size);
  }
}

int CachingAllocator::begin_graph_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  capturing_pool_ = next_pool_++;
  graph_pools_[capturing_pool_];
  return capturing_pool_;
}

void CachingAllocator::end_graph_capture() {
  std::lock_guard<std::mutex> lock(mutex_);
  capturing_pool_ = 0;
}

void CachingAllocator::release_graph_pool(int pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = graph_pools_.find(pool);
  if (it == graph_pools_.end()) return;
  for (auto& [size, blocks] : it->second) {
    for (void* ptr : blocks) free_blocks_[size].push_back(ptr);
  }
  graph_pools_.erase(it);
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
