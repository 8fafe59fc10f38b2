// Time of one all-reduce through sg::distributed (signature check included), for a given number
// of float32 elements: the communication part of a data-parallel step. Under mpirun:
//   mpirun -np 2 build/bench/bench_allreduce --bytes 29530000 --repeats 12
// Rank 0 prints the median and minimum over the repeats, each timed from a barrier.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <vector>

#include "autograd/autograd.h"
#include "distributed/process_group.h"

int main(int argc, char** argv) {
  CLI::App app{"Time an all-reduce of float32 gradients over the ranks of mpirun"};
  int64_t bytes = 29530000;
  int repeats = 12;
  app.add_option("--bytes", bytes, "bytes of float32 to all-reduce")->check(CLI::Range(4, 1 << 30));
  app.add_option("--repeats", repeats, "timed all-reduces")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  try {
    auto group = sg::distributed::init_process_group();
    sg::Tensor buffer = sg::ones({bytes / 4});
    std::vector<double> ms;
    for (int i = 0; i < repeats; ++i) {
      group->barrier();
      const auto start = std::chrono::steady_clock::now();
      group->all_reduce(buffer, sg::distributed::ReduceOp::Average);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    if (group->rank() == 0) {
      fmt::print(
          "all-reduce of {:.2f} MB over {} ranks: median {:.3f} ms, min {:.3f} ms ({} repeats)\n",
          static_cast<double>(bytes) / 1e6, group->world_size(), ms[ms.size() / 2], ms[0], repeats);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_allreduce: {}\n", e.what());
    sg::distributed::abort_job(1);
  }
  return 0;
}
