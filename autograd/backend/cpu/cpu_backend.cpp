// The reference backend's memory: each tensor's buffer straight from the C library (aligned to a
// cache line) and back to it when the tensor dies. The fast backend keeps freed blocks for reuse
// instead (backend/cpu_fast/caching_allocator.h).
#include "autograd/backend/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>

namespace sg::cpu {

namespace {
constexpr size_t kAlignment = 64;
constexpr size_t kMaxRequest = size_t{1} << 62;  // far beyond any machine's memory
}  // namespace

void* CpuBackend::allocate(size_t nbytes) {
  // aligned_alloc takes a multiple of the alignment, and 0 bytes still gets a distinct pointer;
  // rounding up must not wrap around to a small size.
  SG_CHECK(nbytes <= kMaxRequest, "cpu: out of memory allocating {} bytes", nbytes);
  const size_t size =
      nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, size);
  SG_CHECK(p != nullptr, "cpu: out of memory allocating {} bytes", nbytes);
  return p;
}

void CpuBackend::deallocate(void* ptr, size_t /*nbytes*/) { std::free(ptr); }

void CpuBackend::copy_from_host(void* dst, const void* host_src, size_t nbytes) {
  std::memcpy(dst, host_src, nbytes);
}

void CpuBackend::copy_to_host(void* host_dst, const void* src, size_t nbytes) {
  std::memcpy(host_dst, src, nbytes);
}

}  // namespace sg::cpu
