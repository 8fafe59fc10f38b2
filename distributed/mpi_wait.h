// Waiting for an MPI request without waiting forever: MPI_Wait would block for good on a rank
// that never arrives, so requests are polled with MPI_Test until they finish or a deadline
// passes, and then the error names what was waited for.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <string>

namespace sg::distributed {

// Returns once `request` has completed; throws sg::Error "<what>: ... timed out after N s" when
// `timeout` passes first. Polls busily, yielding the core between polls after the first thousand,
// so ranks that share cores with each other (mpirun --oversubscribe) still make progress.
// `meanwhile` runs between polls: a group passes its shared-memory collectives' progress, so that
// a rank waiting here still does its part of one another rank is waiting for.
void wait_for(MPI_Request& request, const std::string& what, std::chrono::milliseconds timeout,
              const std::function<void()>& meanwhile = {});

// MPI's error string for an error code, for messages.
std::string mpi_error_string(int code);

}  // namespace sg::distributed
