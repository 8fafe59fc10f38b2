#include "autograd/backend/cpu_fast/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <unordered_map>
#include <vector>

#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/host_memory.h"

namespace sg {

namespace {

// A caching allocator. A training step frees and allocates the same sizes again and again (every
// activation, every gradient); going back to malloc each time costs a lock, a search, and for
// large blocks an munmap/mmap pair whose fresh pages the kernel must fault in and zero. Freed
// blocks are kept instead and handed out again. Sizes are rounded up to 64 bytes. Two pools:
//
// - Small blocks (< 1 MiB), by size: the smallest kept block that fits a request, if it is at
//   most 1.5 times the request. A loop that repeats exact sizes reuses exact blocks; a request of
//   a new size can take over a block of a size no longer asked for (1.5 times measured best for
//   peak RSS, against exact sizes only and twice; bench/NOTES.md).
//   At most kMaxCachedBytes are kept; a block freed beyond that goes back to the system.
// - Large blocks (>= 1 MiB) are carved out of segments, as in PyTorch's CUDA caching allocator:
//   a request takes the smallest free block that fits and splits off the rest as a free block of
//   its own; a freed block merges with its free neighbours. A block kept from the backward's
//   activations can then serve two weight gradients, or half of it one, where an allocator of
//   whole blocks would leave it idle beside fresh ones (medium's peak held ~60 MiB of such
//   blocks). A segment goes back to the system only when all of it is free.
//
// Running out of memory: allocate() throws sg::Error, also when the bookkeeping itself (a map
// node, a Block) cannot be allocated, and leaves the pools as they were. deallocate() runs in
// destructors and never throws: a freed block that cannot be filed goes back to the system, or,
// for a piece of a segment still partly in use, stays out of the pools (lost until exit).
class CachingAllocator {
 public:
  static constexpr size_t kAlignment = 64;  // a cache line, and what AVX-512 loads like
  static constexpr size_t kMaxCachedBytes = size_t{1} << 30;
  static constexpr size_t kLargeBlock = size_t{1} << 20;  // from here on, the segment pool
  // A segment is the first request that opens it, rounded up to 2 MiB: the rest becomes a free
  // block, the whole merges back when freed. 2 MiB gave medium the lowest peak RSS of the sizes
  // measured, PyTorch's 20 MiB included (bench/NOTES.md): the larger the segments, the more
  // their free ends sit idle beside each other.
  static constexpr size_t kSegmentRound = size_t{2} << 20;
  // A remainder smaller than this stays part of the block handed out: a free piece that small
  // would only wait for its neighbours to be freed.
  static constexpr size_t kMinSplit = size_t{1} << 20;

  void* allocate(size_t nbytes) {
    // Rounding up must not wrap around to a small size.
    SG_CHECK(nbytes <= kMaxRequest, "cpu: out of memory allocating {} bytes", nbytes);
    const size_t size = rounded(nbytes);
    if (size >= kLargeBlock) return allocate_large(nbytes, size);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.lower_bound(size);
      if (it != free_.end() && it->first <= size + size / 2) {
        const size_t block = it->first;
        void* p = it->second.back();
        // Filed before the block leaves the pool: if this throws, nothing has changed.
        if (block != size) oversized_[p] = block;  // so that deallocate files it by its size
        it->second.pop_back();
        if (it->second.empty()) free_.erase(it);
        cached_bytes_ -= block;
        note_allocated(block);
        return p;
      }
      note_allocated(size);
    }
    void* p = system_alloc(kAlignment, size);
    if (p == nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      live_bytes_ -= size;
    }
    SG_CHECK(p != nullptr, "cpu: out of memory allocating {} bytes", nbytes);
    return p;
  }

  void deallocate(void* p, size_t nbytes) {
    size_t size = rounded(nbytes);
    if (size >= kLargeBlock) return deallocate_large(p);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!oversized_.empty()) {
        auto it = oversized_.find(p);
        if (it != oversized_.end()) {
          size = it->second;
          oversized_.erase(it);
        }
      }
      live_bytes_ -= size;
      if (cached_bytes_ + size <= kMaxCachedBytes) {
        try {
          free_[size].push_back(p);
          cached_bytes_ += size;
          return;
        } catch (const std::bad_alloc&) {
          // No memory to file it: give it back to the system instead.
        }
      }
    }
    std::free(p);
  }

  cpu::MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {live_bytes_, peak_live_bytes_, cached_bytes_};
  }

  // Frees the kept small blocks and the segments of which no part is in use.
  void release_cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) std::free(p);
      cached_bytes_ -= size * blocks.size();
    }
    free_.clear();
    for (auto it = free_large_.begin(); it != free_large_.end();) {
      Block* b = *it;
      if (b->prev != nullptr || b->next != nullptr) {  // a piece of a segment still in use
        ++it;
        continue;
      }
      it = free_large_.erase(it);
      cached_bytes_ -= b->size;
      std::free(b->ptr);
      delete b;
    }
  }

 private:
  // A piece of a segment, free or handed out. Its neighbours are the pieces just before and after
  // it in the same segment: a block with neither is a whole segment.
  struct Block {
    char* ptr;
    size_t size;
    bool free;
    Block* prev;
    Block* next;
  };
  struct BySizeThenAddress {  // best fit: the smallest free block that fits, lowest address first
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };

  void* allocate_large(size_t nbytes, size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (void* p = take_free_large(size)) return p;
    }
    // No free block fits: a new segment, allocated outside the lock (it may fault or mmap).
    const size_t segment = (size + kSegmentRound - 1) / kSegmentRound * kSegmentRound;
    void* p = system_alloc(kPage, segment);
    SG_CHECK(p != nullptr, "cpu: out of memory allocating {} bytes", nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      // Filed as a free block, then handed out like any other (another thread may take it first).
      auto block =
          std::make_unique<Block>(Block{static_cast<char*>(p), segment, true, nullptr, nullptr});
      free_large_.insert(block.get());
      cached_bytes_ += segment;
      block.release();
    } catch (const std::bad_alloc&) {
      std::free(p);
      throw;
    }
    return take_free_large(size);  // finds the new segment if nothing smaller fits
  }

  // Hands out the first `size` bytes of the smallest free block that fits (nullptr: none does),
  // splitting off the rest as a free block when it is large enough to serve a request of its own.
  // What may throw (a Block, a map node) comes before any change: a failure leaves the pool as it
  // was. The split-off rest reuses the set node of the block it came from.
  void* take_free_large(size_t size) {
    Block probe{nullptr, size, true, nullptr, nullptr};  // sorts before every block of its size
    auto it = free_large_.lower_bound(&probe);
    if (it == free_large_.end()) return nullptr;
    Block* b = *it;
    std::unique_ptr<Block> rest;
    if (b->size - size >= kMinSplit) {
      rest = std::make_unique<Block>(Block{b->ptr + size, b->size - size, true, b, b->next});
    }
    live_large_.emplace(b->ptr, b);
    auto node = free_large_.extract(it);  // no allocation from here on
    cached_bytes_ -= b->size;
    if (rest) {
      if (b->next != nullptr) b->next->prev = rest.get();
      b->next = rest.get();
      b->size = size;
      cached_bytes_ += rest->size;
      node.value() = rest.release();
      free_large_.insert(std::move(node));
    }
    b->free = false;
    note_allocated(b->size);
    return b->ptr;
  }

  void deallocate_large(void* p) {
    char* segment_to_free = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_large_.find(p);
      if (it == live_large_.end()) {  // a bug elsewhere; throwing from a destructor would abort
        std::fputs("scratchgrad: cpu: freeing a block the allocator did not hand out\n", stderr);
        std::abort();
      }
      Block* b = it->second;
      live_large_.erase(it);
      live_bytes_ -= b->size;
      b->free = true;
      // Merge with free neighbours, so that the space can serve a larger request again. A free
      // neighbour leaves free_large_ before its size changes (the set is ordered by size).
      if (b->prev != nullptr && b->prev->free) {
        Block* prev = b->prev;
        free_large_.erase(prev);
        cached_bytes_ -= prev->size;
        prev->size += b->size;
        prev->next = b->next;
        if (b->next != nullptr) b->next->prev = prev;
        delete b;
        b = prev;
      }
      if (b->next != nullptr && b->next->free) {
        Block* next = b->next;
        free_large_.erase(next);
        cached_bytes_ -= next->size;
        b->size += next->size;
        b->next = next->next;
        if (next->next != nullptr) next->next->prev = b;
        delete next;
      }
      const bool whole_segment = b->prev == nullptr && b->next == nullptr;
      bool filed = false;
      if (!whole_segment || cached_bytes_ + b->size <= kMaxCachedBytes) {
        try {
          free_large_.insert(b);
          cached_bytes_ += b->size;
          filed = true;
        } catch (const std::bad_alloc&) {
          // No memory for the set's node: handled below.
        }
      }
      if (!filed && whole_segment) {
        segment_to_free = b->ptr;  // over the cache's limit (or unfileable): back to the system
        delete b;
      } else if (!filed) {
        b->free = false;  // a piece of a segment in use: kept out of the pools, never merged
      }
    }
    std::free(segment_to_free);
  }

  // aligned_alloc; when it fails, the cache may hold what the system needs: release, try again.
  // A large request the machine is short of releases the cache first: Linux's allocation would
  // succeed, and the out-of-memory killer end the process when the pages are written (the
  // factory's check counted the cache as free for this tensor: host_memory.h).
  void* system_alloc(size_t alignment, size_t size) {
    if (size >= kCheckedBytes &&
        stats().cached_bytes > 0) {  // outside the lock, as the callers are
      const auto memory = available_host_memory();
      if (memory && memory->available < size + kHostMemoryReserve) release_cached();
    }
    void* p = std::aligned_alloc(alignment, size);
    if (p == nullptr) {
      release_cached();
      p = std::aligned_alloc(alignment, size);
    }
    return p;
  }

  static constexpr size_t kMaxRequest = size_t{1} << 62;  // far beyond any machine's memory
  // aligned_alloc needs a multiple of the alignment, and a non-null pointer even for 0 bytes.
  static size_t rounded(size_t nbytes) {
    return nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  void note_allocated(size_t size) {
    live_bytes_ += size;
    peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
  }

  static constexpr size_t kPage = 4096;  // segments start on a page: blocks split at page sizes
                                         // share no page with another block
  std::mutex mutex_;                     // tensors may be freed on any thread
  // Small pool.
  std::map<size_t, std::vector<void*>> free_;    // block size -> kept blocks of that size
  std::unordered_map<void*, size_t> oversized_;  // blocks handed out for a smaller request
  // Large pool.
  std::set<Block*, BySizeThenAddress> free_large_;
  std::unordered_map<void*, Block*> live_large_;  // handed out: pointer -> its block
  size_t cached_bytes_ = 0;                       // free bytes held, both pools
  size_t live_bytes_ = 0, peak_live_bytes_ = 0;   // handed out and not yet freed (block sizes)
};

CachingAllocator& allocator() {
  static CachingAllocator* a = new CachingAllocator;  // never destroyed: tensors in static
  return *a;                                          // objects may be freed after main returns
}

}  // namespace

namespace cpu {

void release_cached_memory() { allocator().release_cached(); }
MemoryStats memory_stats() { return allocator().stats(); }

void* FastCpuBackend::allocate(size_t nbytes) {
  try {
    return allocator().allocate(nbytes);
  } catch (const std::bad_alloc&) {  // the allocator's own bookkeeping ran out of memory
    SG_FAIL("cpu: out of memory allocating {} bytes", nbytes);
  }
}
void FastCpuBackend::deallocate(void* ptr, size_t nbytes) { allocator().deallocate(ptr, nbytes); }

size_t FastCpuBackend::reusable_bytes() const { return allocator().stats().cached_bytes; }

}  // namespace cpu

}  // namespace sg
