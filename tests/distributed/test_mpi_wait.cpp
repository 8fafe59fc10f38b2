// The deadline on every wait (distributed/mpi_wait.h): a peer that never answers is an error
// naming what was waited for, not a hang.
#include "distributed/mpi_wait.h"

#include <chrono>

#include "tests/support/testing.h"

namespace sg::distributed {
namespace {

TEST(DistributedWaitTest, ARequestThatNeverCompletesTimesOutWithItsName) {
  // A receive that no rank will ever send to: exactly what waiting for a dead rank looks like.
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int value = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Irecv(&value, 1, MPI_INT, rank, /*tag=*/4242, MPI_COMM_WORLD, &request);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_SG_ERROR(wait_for(request, "all_reduce on rank 0 with float32 [3] on cpu",
                           std::chrono::milliseconds(300)),
                  "all_reduce on rank 0 with float32 [3] on cpu: timed out after 0.3 s waiting "
                  "for the other ranks");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 5.0);  // bounded: the deadline, plus scheduling on a busy machine
  MPI_Cancel(&request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
}

TEST(DistributedWaitTest, ACompletedRequestReturnsAtOnce) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_SELF, &request);
  wait_for(request, "barrier", std::chrono::milliseconds(1000));
  EXPECT_EQ(request, MPI_REQUEST_NULL);
}

}  // namespace
}  // namespace sg::distributed
