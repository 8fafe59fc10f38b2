// How much host memory is left, so that a tensor the machine cannot hold is an error that names
// it instead of a killed process. Linux overcommits: allocating more than the machine has
// succeeds, and the out-of-memory killer ends the process (exit 137, no message) when the pages
// are first written, which for a tensor is at once (every factory fills its values).
//
//   empty({4096, 65536, 64})   // sg::OutOfMemoryError: empty: a float32 tensor of shape
//                              // [4096, 65536, 64] needs 64.00 GiB; 21.93 GiB of memory is left
//                              // (MemAvailable + SwapFree)
//
// Only allocations of kCheckedBytes or more are checked (reading /proc costs microseconds), so a
// machine can still run out through many small tensors; what it catches is a model, a batch or a
// buffer that can never fit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "autograd/error.h"

namespace sg {

// Thrown when a tensor does not fit in the memory left (PyTorch's torch.OutOfMemoryError).
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

struct HostMemory {
  uint64_t available = 0;  // bytes
  std::string source;      // "MemAvailable + SwapFree", or the cgroup limit that is lower
};

// The bytes this process can still take: /proc/meminfo's MemAvailable plus SwapFree, or less
// where the process's memory cgroup sets a lower limit (v1's memory.limit_in_bytes, v2's
// memory.max, less what the group holds apart from page cache); nothing where /proc cannot be
// read.
std::optional<HostMemory> available_host_memory();

inline constexpr uint64_t kCheckedBytes = uint64_t{64} << 20;  // 64 MiB
// Kept free for what is not a tensor (the allocator's bookkeeping, BLAS's buffers, the stack).
inline constexpr uint64_t kHostMemoryReserve = uint64_t{256} << 20;

// Refuses an allocation of `nbytes` that would leave less than kHostMemoryReserve of the memory
// left (the factory asks for allocations of kCheckedBytes or more); `reusable` bytes are held by
// the allocator for reuse (counted as used by the system, but free to a new tensor). `what` starts
// the message
// ("empty: a float32 tensor of shape [4096, 65536, 64]").
void check_host_allocation(uint64_t nbytes, uint64_t reusable, const std::string& what);

namespace detail {
// Tests only: the memory left as available_host_memory() reports it (nothing: read the machine).
void set_host_memory_for_testing(std::optional<HostMemory> memory);
// What a memory cgroup still allows, from /proc/self/cgroup's text and the cgroup file system's
// root ("/sys/fs/cgroup"); nothing where no limit is set or it cannot be read.
std::optional<uint64_t> cgroup_headroom(const std::string& self_cgroup, const std::string& root);
}  // namespace detail

}  // namespace sg
