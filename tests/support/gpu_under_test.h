// The device the CUDA tests run on. Compiled with -DSG_CUDA_PARITY_ON_CPU, a CUDA test file runs
// CPU against CPU: a check of the tests themselves (every comparison must then pass exactly) on a
// machine without a GPU (the target cuda_tests_on_cpu).
#pragma once

#include "autograd/device.h"

namespace sg::testing {

#ifdef SG_CUDA_PARITY_ON_CPU
inline constexpr Device kGpu = kCPU;
inline constexpr bool kSelfTest = true;
#else
inline constexpr Device kGpu = Device::cuda(0);
inline constexpr bool kSelfTest = false;
#endif

}  // namespace sg::testing
