// The CUDA backend. This version knows how to find a GPU and says clearly why it cannot be used;
// the kernels (elementwise, reductions, cuBLAS gemm, softmax...) arrive with the CUDA backend
// work described in docs/design.md. Until then any CUDA tensor is refused up front rather than
// failing later inside a kernel.
#include <cuda_runtime.h>

#include <string>

#include "autograd/backend/cuda/cuda_backend.h"
#include "autograd/backend/cuda/cuda_check.h"

namespace sg {

namespace {

// The first device query decides: any error (no driver, no device, driver too old) means no GPU.
std::string probe_cuda() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls are not confused by it
    return fmt::format("no usable CUDA device: {}", cudaGetErrorString(status));
  }
  if (count == 0) return "no CUDA device found";
  return "";
}

const std::string& cuda_probe_result() {
  static const std::string reason = probe_cuda();
  return reason;
}

}  // namespace

// False until the kernels exist: a GPU alone is not enough to run scratchgrad ops on it.
bool cuda_available() { return false; }

std::string cuda_unavailable_reason() {
  if (!cuda_probe_result().empty()) return cuda_probe_result();
  return "scratchgrad's CUDA kernels are not part of this version (CPU only for now)";
}

Backend& cuda_backend(int index) { SG_FAIL("cuda:{}: {}", index, cuda_unavailable_reason()); }

}  // namespace sg
