// Which CPU kernels run: the reference backend (autograd/backend/cpu/: plain loops and one BLAS
// call per product, the code the chapters quote) or the fast one (autograd/backend/cpu_fast/: the
// same results, with the thread pool, register kernels and fused kernels; docs/design.md, "Two
// CPU backends"). The fast kernels are the default; SCRATCHGRAD_KERNELS=reference (or fast) in
// the environment sets the starting choice, and set_cpu_kernels changes it for the tensors
// computed afterwards. A tensor's memory goes back to the backend that allocated it, so switching
// with live tensors is safe.
#pragma once

#include <string_view>

namespace sg {

enum class CpuKernels { Reference, Fast };

// The kernels CPU ops run now. Throws a clear error if SCRATCHGRAD_KERNELS holds another value.
CpuKernels cpu_kernels();
void set_cpu_kernels(CpuKernels kernels);

// "reference" or "fast", and back; parse_cpu_kernels throws for any other name.
std::string_view cpu_kernels_name(CpuKernels kernels);
CpuKernels parse_cpu_kernels(std::string_view name);

// Sets the CPU kernels for a scope and restores the previous choice at its end.
class CpuKernelsGuard {
 public:
  explicit CpuKernelsGuard(CpuKernels kernels) : saved_(cpu_kernels()) { set_cpu_kernels(kernels); }
  ~CpuKernelsGuard() { set_cpu_kernels(saved_); }
  CpuKernelsGuard(const CpuKernelsGuard&) = delete;
  CpuKernelsGuard& operator=(const CpuKernelsGuard&) = delete;

 private:
  CpuKernels saved_;
};

}  // namespace sg
