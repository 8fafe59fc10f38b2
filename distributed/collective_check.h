// The check before every collective that all ranks agree on what they are doing: same operation,
// dtype, device type, shape and root. Each rank contributes a fixed 120-byte signature to one
// all-gather, so every rank sees every other's and throws the same error on a mismatch (instead of
// MPI reading past a smaller buffer, or two ranks waiting in different collectives). Its cost is
// one small collective: a few microseconds between processes on one machine, one network latency
// between machines; docs/15-distributed.md weighs it against the data it protects.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <string>

#include "autograd/tensor.h"

namespace sg::distributed {

// Throws sg::Error "<op>: ranks disagree: rank 0 has float32 [3, 4] on cpu, rank 1 has float32
// [4, 4] on cpu" unless every rank of `comm` passed the same signature. `root` is -1 where the
// operation has none; `detail` (say, the reduce op) is compared too. `refused`: this rank's own
// error for a tensor no collective can take (undefined, int64, not contiguous), or empty; it is
// thrown here, after the exchange, so that the other ranks learn of it and fail too instead of
// waiting. `meanwhile` runs while it waits (see wait_for).
void check_same_on_all_ranks(MPI_Comm comm, const std::string& op, const Tensor& tensor, int root,
                             int detail, const std::string& refused,
                             std::chrono::milliseconds timeout,
                             const std::function<void()>& meanwhile = {});

// "float32 [3, 4] on cpu"
std::string describe(const Tensor& tensor);

}  // namespace sg::distributed
