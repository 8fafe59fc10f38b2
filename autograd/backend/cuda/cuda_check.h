// SG_CUDA_CHECK(call): throw sg::Error with file:line, the call and CUDA's error string.
#pragma once

#include <cuda_runtime.h>

#include "autograd/error.h"

#define SG_CUDA_CHECK(call)                                                                      \
  do {                                                                                           \
    cudaError_t sg_cuda_status_ = (call);                                                        \
    if (sg_cuda_status_ != cudaSuccess) {                                                        \
      throw ::sg::Error(::fmt::format("cuda: {} failed at {}:{}: {}", #call, __FILE__, __LINE__, \
                                      cudaGetErrorString(sg_cuda_status_)));                     \
    }                                                                                            \
  } while (false)
