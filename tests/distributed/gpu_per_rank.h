// For the GPU tests under mpirun: each rank's own GPU (numbered by its rank on its machine), or
// why not. Every rank learns whether *all* ranks have one, so they run or skip together (a rank
// that skipped alone would leave the others waiting in NCCL's setup).
#pragma once

#include <string>

#include "autograd/autograd.h"
#include "distributed/process_group.h"

namespace sg::testing {

// Empty when every rank can use Device::cuda(group.local_rank()); else the reason to skip.
inline std::string why_not_a_gpu_per_rank(distributed::ProcessGroup& group) {
  std::string why_not = cuda_available() ? "" : "no GPU: " + cuda_unavailable_reason();
  if (why_not.empty()) {
    try {
      (void)zeros({1}, TensorOptions(kFloat32).device(Device::cuda(group.local_rank())));
    } catch (const Error& e) {
      why_not = std::to_string(group.world_size()) +
                " ranks on this machine need as many GPUs: " + e.what();
    }
  }
  Tensor all_can = scalar_tensor(why_not.empty() ? 1.0 : 0.0, kFloat64);
  group.all_reduce(all_can, distributed::ReduceOp::Sum);
  if (all_can.item<double>() < group.world_size() && why_not.empty()) {
    why_not = "another rank has no GPU of its own";
  }
  return why_not;
}

}  // namespace sg::testing
