// CachingAllocator: device memory for one GPU, kept for reuse instead of given back.
//
// cudaMalloc and cudaFree are slow (tens of microseconds, and cudaFree waits for the whole GPU),
// while a training step frees and allocates the same few hundred sizes every step. So a freed
// block goes onto a free list for its size bucket, and the next request of that bucket takes it:
// after the first step no call reaches the driver. cudaMalloc runs only on a miss; when it fails,
// the cache is given back to the driver and the allocation tried once more.
//
// One stream per device makes reuse safe without events: a kernel that still reads a freed block
// was queued before any kernel that writes its next owner, and runs first.
//
// A CUDA graph (cuda_graph.h) replays the addresses it was captured with, so the blocks its
// kernels use must never go to anyone else while it lives. During a capture every allocation
// comes from the graph's own pool, and every block freed goes to it; a block of that pool that is
// freed later goes back to the pool too,
// where only the same capture may take it again (in stream order, so that is safe), and only when
// the graph is destroyed does the pool's free space join the general cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace sg {

// What one device's allocator holds (bytes count whole blocks, i.e. bucket sizes).
struct CudaMemoryStats {
  int64_t allocated_bytes = 0;       // in blocks handed out and not yet freed
  int64_t reserved_bytes = 0;        // obtained from cudaMalloc: allocated + cached
  int64_t peak_allocated_bytes = 0;  // the most allocated_bytes has been
  int64_t allocations = 0;           // allocate() calls
  int64_t cache_hits = 0;            // ... served from a free list
  int64_t cuda_mallocs = 0;          // ... that had to call cudaMalloc
};

namespace cuda {

class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least nbytes (never null, even for 0 bytes). The caller has made device_ the
  // current device. Throws sg::Error when the device is out of memory. untouched: during a
  // capture, a block the graph has not used (not from its pool's free list), for a tensor the host
  // writes before each replay (cuda_graph.h's ReplayInputScope).
  void* allocate(size_t nbytes, bool untouched = false);
  // Puts the block back on its free list; no CUDA call, so it is safe in destructors.
  void deallocate(void* ptr) noexcept;
  // Gives every cached (free) block back to the driver.
  void empty_cache();
  CudaMemoryStats stats() const;

  // Graph pools: from begin_graph_pool() to end_graph_capture(), allocate() serves the new pool
  // (its id is returned); release_graph_pool(id) hands its free blocks to the general cache, and
  // its blocks still in use go there when freed.
  int begin_graph_pool();
  void end_graph_capture();
  void release_graph_pool(int pool);

  // The bucket a request falls in: powers of two from 512 bytes to 1 MiB (small tensors come in
  // many sizes; rounding up wastes little), then multiples of 2 MiB (large tensors are few, and a
  // power of two could waste almost half).
  static size_t bucket_size(size_t nbytes) {
    constexpr size_t kMinBlock = 512, kSmall = size_t{1} << 20, kLargeStep = size_t{2} << 20;
    if (nbytes <= kMinBlock) return kMinBlock;
    if (nbytes <= kSmall) {
      size_t size = kMinBlock;
      while (size < nbytes) size *= 2;
      return size;
    }
    return (nbytes + kLargeStep - 1) / kLargeStep * kLargeStep;
  }

 private:
  using FreeLists = std::unordered_map<size_t, std::vector<void*>>;  // bucket size -> free blocks
  struct LiveBlock {
    size_t size;  // its bucket
    int pool;     // 0: the general cache; else a graph's pool
  };
  void release_cached_blocks();  // with mutex_ held
  static void* take(FreeLists& lists, size_t size);

  int device_;
  mutable std::mutex mutex_;
  FreeLists free_blocks_;                           // the general cache
  std::unordered_map<int, FreeLists> graph_pools_;  // pool id -> its free blocks
  int capturing_pool_ = 0;                          // the pool allocate() serves; 0: general
  int next_pool_ = 1;
  std::unordered_map<void*, LiveBlock> live_blocks_;
  CudaMemoryStats stats_;
};

}  // namespace cuda
}  // namespace sg
