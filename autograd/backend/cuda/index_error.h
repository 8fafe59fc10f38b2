// The note a CUDA kernel leaves for a bad index (a kernel cannot throw): the backend turns it into
// an sg::Error at its next call (launch.cuh: report_bad_index; cuda_backend.cu).
#pragma once

#include <cstdint>

namespace sg::cuda {

// Lives in pinned host memory mapped into the device: the host reads it without a copy.
struct IndexErrorRecord {
  int op;  // index_op_id() of the public op that launched the kernel
  int64_t index, size, dim;
  int ready;  // written last: the fields above are complete
};

struct IndexErrorSlot {
  int* claimed;              // device memory: the first failing thread takes it
  IndexErrorRecord* record;  // the mapped record, as the device sees it
};

}  // namespace sg::cuda
