#include "autograd/backend/backend.h"

#include <atomic>
#include <cstdlib>

#include "autograd/backend/cpu/cpu_backend.h"
#include "autograd/backend/cpu_fast/fast_cpu_backend.h"
#include "autograd/cpu_features.h"
#if SCRATCHGRAD_HAS_CUDA
#include "autograd/backend/cuda/cuda_backend.h"
#endif

namespace sg {

namespace {

// The choice of CPU kernels, read from SCRATCHGRAD_KERNELS on first use.
std::atomic<CpuKernels>& chosen_cpu_kernels() {
  static std::atomic<CpuKernels> chosen = [] {
    const char* env = std::getenv("SCRATCHGRAD_KERNELS");
    if (env == nullptr || *env == '\0') return CpuKernels::Fast;
    try {
      return parse_cpu_kernels(env);
    } catch (const Error&) {
      SG_FAIL("SCRATCHGRAD_KERNELS: expected 'reference' or 'fast', got '{}'", env);
    }
  }();
  return chosen;
}

}  // namespace

CpuKernels cpu_kernels() { return chosen_cpu_kernels().load(std::memory_order_relaxed); }
void set_cpu_kernels(CpuKernels kernels) {
  chosen_cpu_kernels().store(kernels, std::memory_order_relaxed);
}

std::string_view cpu_kernels_name(CpuKernels kernels) {
  return kernels == CpuKernels::Reference ? "reference" : "fast";
}

CpuKernels parse_cpu_kernels(std::string_view name) {
  if (name == "reference") return CpuKernels::Reference;
  if (name == "fast") return CpuKernels::Fast;
  SG_FAIL("cpu kernels: expected 'reference' or 'fast', got '{}'", name);
}

Backend& cpu_backend(CpuKernels kernels) {
  // Both CPU backends' kernels are compiled for SCRATCHGRAD_CPU_ARCH: on a CPU without it, every
  // op is refused with the reason instead of dying on an illegal instruction.
  static const std::string unsupported = cpu_kernels_unsupported_reason(detected_cpu_features());
  SG_CHECK(unsupported.empty(), "cpu kernels: {}", unsupported);
  static cpu::CpuBackend* reference = new cpu::CpuBackend;     // never destroyed: tensors in static
  static cpu::FastCpuBackend* fast = new cpu::FastCpuBackend;  // objects die after main returns
  if (kernels == CpuKernels::Reference) return *reference;
  return *fast;
}

// The only switch on the device in the project (docs/design.md, "One switch on device").
Backend& backend_for(Device device) {
  switch (device.type) {
    case DeviceType::CPU:
      return cpu_backend(cpu_kernels());
    case DeviceType::CUDA:
#if SCRATCHGRAD_HAS_CUDA
      return cuda_backend(device.index);
#else
      SG_FAIL(
          "{}: scratchgrad was built without CUDA (configure with -DSCRATCHGRAD_CUDA=ON on a "
          "machine with nvcc)",
          device);
#endif
  }
  SG_FAIL("backend_for: unknown device type");
}

#if !SCRATCHGRAD_HAS_CUDA
bool cuda_available() { return false; }
std::string cuda_unavailable_reason() {
  return "scratchgrad was built without CUDA (SCRATCHGRAD_CUDA=OFF)";
}
#endif

}  // namespace sg
