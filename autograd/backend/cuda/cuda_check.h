// SG_CUDA_CHECK(call) and SG_CUBLAS_CHECK(call): throw sg::Error with file:line, the call and the
// library's error string. Every CUDA runtime and cuBLAS call in backend/cuda/ goes through one.
// SG_CUDA_CHECK_LAUNCH() after a kernel launch reports a bad launch configuration at once (an
// error inside the kernel shows up at the next synchronising call instead).
#pragma once

#include <cuda_runtime.h>

#include "autograd/backend/cuda/cublas_api.h"
#include "autograd/error.h"

#define SG_CUDA_CHECK(call)                                                                      \
  do {                                                                                           \
    cudaError_t sg_cuda_status_ = (call);                                                        \
    if (sg_cuda_status_ != cudaSuccess) {                                                        \
      throw ::sg::Error(::fmt::format("cuda: {} failed at {}:{}: {}", #call, __FILE__, __LINE__, \
                                      cudaGetErrorString(sg_cuda_status_)));                     \
    }                                                                                            \
  } while (false)

#define SG_CUBLAS_CHECK(call)                                                            \
  do {                                                                                   \
    cublasStatus_t sg_cublas_status_ = (call);                                           \
    if (sg_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                    \
      throw ::sg::Error(                                                                 \
          ::fmt::format("cublas: {} failed at {}:{}: {}", #call, __FILE__, __LINE__,     \
                        ::sg::cuda::cublas_api().get_status_string(sg_cublas_status_))); \
    }                                                                                    \
  } while (false)

#define SG_CUDA_CHECK_LAUNCH() SG_CUDA_CHECK(cudaGetLastError())

namespace sg::cuda {

// Makes `device` current for the lifetime of the guard, and restores the previous one after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : device_(device) {
    SG_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device_) SG_CUDA_CHECK(cudaSetDevice(device_));
  }
  ~DeviceGuard() {
    if (previous_ != device_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int device_;
  int previous_ = 0;
};

}  // namespace sg::cuda
