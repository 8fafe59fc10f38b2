// Time of one all-reduce of float32 gradients over the ranks of mpirun: the communication part of a
// data-parallel step. Under mpirun:
//   mpirun -np 2 build/bench/bench_allreduce --bytes 29530000 --repeats 12 --step-ms 590
// Three ways, on the same number of bytes, taking turns within each repeat (so that a busy moment
// of the machine hits them alike), each timed from a barrier:
//   MPI_Allreduce         Open MPI's own blocking all-reduce, in place: the anchor
//   ProcessGroup (mpi)    sg::distributed through MPI's messages (MPI_Iallreduce, polled)
//   ProcessGroup          sg::distributed as data-parallel training uses it (shared memory when
//                         every rank is on one machine); both include the signature check and the
//                         divide of an Average
// Rank 0 prints, for each, the minimum and the median over the repeats, the algorithm bandwidth
// (bytes / time, as nccl-tests' algbw) at the minimum, and with --step-ms the share of a training
// step the minimum is.
#include <CLI/CLI.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "autograd/autograd.h"
#include "distributed/process_group.h"

namespace {

struct Way {
  std::string name;
  std::function<void()> run;
  std::vector<double> ms;
};

double elapsed_ms(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time an all-reduce of float32 gradients over the ranks of mpirun"};
  int64_t bytes = 29530000;
  int repeats = 12;
  double step_ms = 0;
  std::string only;
  app.add_option("--bytes", bytes, "bytes of float32 to all-reduce")->check(CLI::Range(4, 1 << 30));
  app.add_option("--repeats", repeats, "timed all-reduces of each way")->check(CLI::Range(1, 1000));
  app.add_option("--step-ms", step_ms, "a training step's time, to print each way's share of it")
      ->check(CLI::PositiveNumber);
  app.add_option("--only", only,
                 "time only the ways whose name contains this (e.g. shm, to profile)");
  CLI11_PARSE(app, argc, argv);
  try {
    auto group = sg::distributed::init_process_group();
    auto through_mpi = sg::distributed::new_group({.shared_memory = false});
    const int64_t n = bytes / 4;
    sg::Tensor buffer = sg::ones({n});
    std::vector<float> raw(static_cast<size_t>(n), 1.0f);
    std::vector<Way> ways = {
        {"MPI_Allreduce (Open MPI, blocking)",
         [&] {
           MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                         MPI_COMM_WORLD);
         },
         {}},
        {fmt::format("ProcessGroup::all_reduce ({})", through_mpi->backend_name(sg::kCPU)),
         [&] { through_mpi->all_reduce(buffer, sg::distributed::ReduceOp::Average); },
         {}},
        {fmt::format("ProcessGroup::all_reduce ({})", group->backend_name(sg::kCPU)),
         [&] { group->all_reduce(buffer, sg::distributed::ReduceOp::Average); },
         {}}};
    std::erase_if(ways, [&](const Way& way) { return way.name.find(only) == std::string::npos; });
    for (Way& way : ways) way.run();  // warm-up: first-touch of the pages, MPI's connections
    for (int i = 0; i < repeats; ++i) {
      for (Way& way : ways) {
        group->barrier();
        const auto start = std::chrono::steady_clock::now();
        way.run();
        way.ms.push_back(elapsed_ms(start));
      }
    }
    if (group->rank() == 0) {
      fmt::print("all-reduce of {:.2f} MB of float32 over {} ranks, {} repeats each, in turns:\n",
                 static_cast<double>(bytes) / 1e6, group->world_size(), repeats);
      for (Way& way : ways) {
        std::sort(way.ms.begin(), way.ms.end());
        const double min = way.ms.front(), median = way.ms[way.ms.size() / 2];
        fmt::print("  {:<40} min {:8.3f} ms  median {:8.3f} ms  {:6.2f} GB/s at the min", way.name,
                   min, median, static_cast<double>(bytes) / 1e6 / min);
        if (step_ms > 0) fmt::print("  {:5.1f}% of a {:.0f} ms step", 100 * min / step_ms, step_ms);
        fmt::print("\n");
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_allreduce: {}\n", e.what());
    sg::distributed::abort_job(1);
  }
  return 0;
}
