#include "distributed/mpi_wait.h"

#include <thread>

#include "autograd/error.h"

namespace sg::distributed {

void wait_for(MPI_Request& request, const std::string& what, std::chrono::milliseconds timeout,
              const std::function<void()>& meanwhile) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (int64_t polls = 0;; ++polls) {
    int done = 0;
    const int code = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    SG_CHECK(code == MPI_SUCCESS, "{}: MPI failed: {}", what, mpi_error_string(code));
    if (done) return;
    if (meanwhile) meanwhile();
    const auto waited = Clock::now() - start;
    SG_CHECK(waited < timeout,
             "{}: timed out after {:.1f} s waiting for the other ranks (one of them died, hangs, "
             "or called a different sequence of collectives)",
             what, std::chrono::duration<double>(timeout).count());
    // Spin first (a collective between live ranks often finishes in microseconds), then yield
    // the core between polls: with more ranks than cores, a spinning rank would starve the one it
    // waits for. Never sleep: Open MPI moves a collective forward only inside MPI_Test, so a
    // sleeping rank stalls the transfer (bench/README.md, "Data-parallel scaling").
    if (polls >= 1000) std::this_thread::yield();
  }
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

}  // namespace sg::distributed
