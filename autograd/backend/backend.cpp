#include "autograd/backend/backend.h"

#include "autograd/backend/cpu/cpu_backend.h"
#if SCRATCHGRAD_HAS_CUDA
#include "autograd/backend/cuda/cuda_backend.h"
#endif

namespace sg {

// The only switch on the device in the project (docs/design.md, "One switch on device").
Backend& backend_for(Device device) {
  switch (device.type) {
    case DeviceType::CPU:
      return cpu_backend();
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
