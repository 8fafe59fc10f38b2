// The fast CPU backend's memory: a caching allocator that keeps freed blocks for reuse (small
// blocks by size, large ones carved out of segments as in PyTorch's CUDA caching allocator; the
// CUDA backend's own is backend/cuda/allocator.h). FastCpuBackend::allocate and deallocate go
// through it (caching_allocator.cpp says how it picks a block).
#pragma once

#include <cstddef>

namespace sg::cpu {

struct MemoryStats {
  size_t live_bytes, peak_live_bytes, cached_bytes;  // tensors' memory now, at most, kept for reuse
};
// What the allocator holds now; the fast backend's tensors only (the reference backend allocates
// straight from the C library).
MemoryStats memory_stats();
// Frees the kept blocks, and the segments of which no part is in use.
void release_cached_memory();

}  // namespace sg::cpu
