#include "autograd/backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace sg {

namespace {

// A caching allocator. A training step frees and allocates the same sizes again and again (every
// activation, every gradient); going back to malloc each time costs a lock, a search, and for
// large blocks an munmap/mmap pair whose fresh pages the kernel must fault in and zero. Freed
// blocks are kept instead, by size, and handed out again: the smallest kept block that fits a
// request, if it is at most 1.5 times the request. A loop that repeats exact sizes reuses exact
// blocks; a request of a new size can take over a block of a size no longer asked for, so the
// cache holds fewer dead blocks beside new ones (1.5x measured best for peak RSS: annotated 402
// MiB with exact sizes only, 342 MiB at 1.5x, 396 MiB at 2x; bench/NOTES.md). Sizes are rounded
// up to 64 bytes. At most kMaxCachedBytes are kept; a block freed beyond that goes back to the
// system.
class CachingAllocator {
 public:
  static constexpr size_t kAlignment = 64;  // a cache line, and what AVX-512 loads like
  static constexpr size_t kMaxCachedBytes = size_t{1} << 30;

  void* allocate(size_t nbytes) {
    const size_t size = rounded(nbytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.lower_bound(size);
      if (it != free_.end() && it->first <= size + size / 2) {
        const size_t block = it->first;
        void* p = it->second.back();
        it->second.pop_back();
        if (it->second.empty()) free_.erase(it);
        cached_bytes_ -= block;
        if (block != size) oversized_[p] = block;  // so that deallocate files it by its size
        note_allocated(block);
        return p;
      }
      note_allocated(size);
    }
    void* p = std::aligned_alloc(kAlignment, size);
    if (p == nullptr) {  // maybe the cache holds what the system needs: give it back, try again
      release_cached();
      p = std::aligned_alloc(kAlignment, size);
    }
    if (p == nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      live_bytes_ -= size;
    }
    SG_CHECK(p != nullptr, "cpu: out of memory allocating {} bytes", nbytes);
    return p;
  }

  void deallocate(void* p, size_t nbytes) {
    size_t size = rounded(nbytes);
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
        free_[size].push_back(p);
        cached_bytes_ += size;
        return;
      }
    }
    std::free(p);
  }

  cpu::MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {live_bytes_, peak_live_bytes_, cached_bytes_};
  }

  void release_cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) std::free(p);
    }
    free_.clear();
    cached_bytes_ = 0;
  }

 private:
  // aligned_alloc needs a multiple of the alignment, and a non-null pointer even for 0 bytes.
  static size_t rounded(size_t nbytes) {
    return nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  void note_allocated(size_t size) {
    live_bytes_ += size;
    peak_live_bytes_ = std::max(peak_live_bytes_, live_bytes_);
  }

  std::mutex mutex_;                             // tensors may be freed on any thread
  std::map<size_t, std::vector<void*>> free_;    // block size -> kept blocks of that size
  std::unordered_map<void*, size_t> oversized_;  // blocks handed out for a smaller request
  size_t cached_bytes_ = 0;
  size_t live_bytes_ = 0, peak_live_bytes_ = 0;  // handed out and not yet freed (block sizes)
};

CachingAllocator& allocator() {
  static CachingAllocator* a = new CachingAllocator;  // never destroyed: tensors in static
  return *a;                                          // objects may be freed after main returns
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }

  void* allocate(size_t nbytes) override { return allocator().allocate(nbytes); }
  void deallocate(void* ptr, size_t nbytes) override { allocator().deallocate(ptr, nbytes); }
  void copy_from_host(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy_to_host(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }

  void fill(const Tensor& out, double value) override { cpu::fill(out, value); }
  void copy(const Tensor& src, const Tensor& dst) override { cpu::copy(src, dst); }
  void unary(UnaryOp op, const Tensor& x, const Tensor& out, double alpha, double beta) override {
    cpu::unary(op, x, out, alpha, beta);
  }
  void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) override {
    cpu::binary(op, a, b, out);
  }
  void where(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& out) override {
    cpu::where(c, a, b, out);
  }
  void reduce(ReduceOp op, const Tensor& x, int64_t reduced_dims, const Tensor& out,
              const Tensor& indices) override {
    cpu::reduce(op, x, reduced_dims, out, indices);
  }
  void gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) override {
    cpu::gemm(a, b, out, accumulate);
  }
  void softmax(const Tensor& x, int64_t dim, bool log, const Tensor& out) override {
    cpu::softmax(x, dim, log, out);
  }
  void softmax_backward(const Tensor& grad, const Tensor& y, int64_t dim, bool log,
                        const Tensor& out) override {
    cpu::softmax_backward(grad, y, dim, log, out);
  }
  void uniform(const Tensor& out, uint64_t state) override { cpu::uniform(out, state); }
  void index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
                    std::string_view op) override {
    cpu::index_select(x, dim, index, out, op);
  }
  void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) override {
    cpu::index_add(out, dim, index, src);
  }
  void gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& out,
              std::string_view op) override {
    cpu::gather(x, dim, index, out, op);
  }
  void scatter_add(const Tensor& out, int64_t dim, const Tensor& index,
                   const Tensor& src) override {
    cpu::scatter_add(out, dim, index, src);
  }

  bool masked_softmax(const Tensor& x, const Tensor& mask, const Tensor& out) override {
    cpu::masked_softmax(x, mask, out);
    return true;
  }
  bool layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                  const Tensor& out, const Tensor& mean, const Tensor& rstd) override {
    cpu::layer_norm(x, weight, bias, eps, out, mean, rstd);
    return true;
  }
  bool layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& mean,
                           const Tensor& rstd, const Tensor& weight, const Tensor& dx,
                           const Tensor& dweight, const Tensor& dbias) override {
    cpu::layer_norm_backward(grad, x, mean, rstd, weight, dx, dweight, dbias);
    return true;
  }
  bool adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                   const Tensor& exp_avg_sq, double lr, double beta1, double beta2, double eps,
                   double weight_decay, bool decoupled_weight_decay, int64_t step) override {
    cpu::adam_update(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay,
                     decoupled_weight_decay, step);
    return true;
  }
};

}  // namespace

void cpu::release_cached_memory() { allocator().release_cached(); }
cpu::MemoryStats cpu::memory_stats() { return allocator().stats(); }

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace sg
