// The main of distributed_tests: every rank joins the process group, then runs the same tests in
// the same order (each test's collectives must match across ranks). Run by ctest both alone (a
// group of one) and under `mpirun -np 2`; only rank 0 prints GoogleTest's report.
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "distributed/process_group.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto group = sg::distributed::init_process_group(
      {.timeout = std::chrono::seconds(60)});  // a hung test fails instead of waiting for ctest
  if (group->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  // Every rank's verdict counts: a failure on rank 1 alone must fail the run.
  sg::Tensor verdict = sg::scalar_tensor(static_cast<double>(failed != 0), sg::kFloat64);
  group->all_reduce(verdict, sg::distributed::ReduceOp::Sum);
  const bool any_failed = verdict.item<double>() > 0;
  if (group->rank() == 0 && any_failed && failed == 0) {
    fmt::print(stderr, "distributed_tests: a test failed on another rank (see its output)\n");
  }
  sg::distributed::destroy_process_group();
  return any_failed ? 1 : 0;
}
