// Which GPUs run autocast's bfloat16 products: those with bfloat16 tensor cores, compute
// capability 8.0 (Ampere: A100) and later, as torch.cuda.is_bf16_supported() asks. A build for an
// older GPU (CMAKE_CUDA_ARCHITECTURES) runs float32 products there, and autocast says why it
// cannot. Plain C++, so that the tests check the message on any machine.
#pragma once

#include <string>
#include <string_view>

#include "autograd/error.h"

namespace sg::cuda {

// "" where a GPU of `compute_capability` (10 * major + minor) runs them, else the reason, for
// `device` ("cuda:0").
inline std::string bfloat16_products_unsupported_reason(std::string_view device,
                                                        int compute_capability) {
  if (compute_capability >= 80) return "";
  return fmt::format(
      "{} (compute capability {}.{}) has no bfloat16 tensor cores, which autocast's bfloat16 "
      "products need (compute capability 8.0 or later: A100, H100 and newer); run the model "
      "without sg::AutocastGuard there",
      device, compute_capability / 10, compute_capability % 10);
}

}  // namespace sg::cuda
