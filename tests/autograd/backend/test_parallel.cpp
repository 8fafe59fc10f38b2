// Tests for the CPU thread pool (backend/cpu_fast/parallel.h): every index is visited exactly once,
// small work stays on the caller, nested and throwing kernels neither deadlock nor get lost, and
// the kernels that use the pool give the same numbers with one thread as with several.
#include "autograd/backend/cpu_fast/parallel.h"

#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "autograd/backend/backend.h"
#include "autograd/blas.h"
#include "autograd/cpu_features.h"
#include "autograd/ops.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

// Restores the pool's size when a test changes it.
class ThreadsGuard {
 public:
  explicit ThreadsGuard(int threads) : saved_(cpu::num_threads()) { cpu::set_num_threads(threads); }
  ~ThreadsGuard() { cpu::set_num_threads(saved_); }

 private:
  int saved_;
};

// fn's results with the pool at `threads` threads.
std::vector<Tensor> with_threads(int threads, const std::function<std::vector<Tensor>()>& fn) {
  ThreadsGuard guard(threads);
  return fn();
}

void expect_same_bits(const std::vector<Tensor>& serial, const std::vector<Tensor>& parallel,
                      const std::string& what) {
  ASSERT_EQ(serial.size(), parallel.size());
  for (size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(serial[i].to_vector<float>(), parallel[i].to_vector<float>()) << what << " " << i;
  }
}

TEST(BackendParallelFor, VisitsEveryIndexExactlyOnce) {
  ThreadsGuard threads(2);
  const int64_t n = 100003;  // not a multiple of any chunk size
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  cpu::parallel_for(n, 1000, [&](int64_t lo, int64_t hi) {
    ASSERT_LE(0, lo);
    ASSERT_LT(lo, hi);
    ASSERT_LE(hi, n);
    for (int64_t i = lo; i < hi; ++i) visits[static_cast<size_t>(i)].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(visits[static_cast<size_t>(i)].load(), 1) << i;
}

// Thread t's share of [0, n) is [n·t/T, n·(t+1)/T) in every kernel, whatever its grain, so the
// rows a thread writes in one kernel are the rows it reads in the next: no chunk may straddle
// the boundary between two threads' shares (work below two grains is one call on the caller).
TEST(BackendParallelFor, ChunksNeverStraddleTheThreadsShares) {
  ThreadsGuard threads(2);
  for (const int64_t n : {2, 3, 17, 800, 720, 100003}) {
    for (const int64_t grain : {int64_t{1}, int64_t{7}, n / 2}) {
      std::atomic<int64_t> total{0}, straddling{0};
      cpu::parallel_for(n, grain, [&](int64_t lo, int64_t hi) {
        total.fetch_add(hi - lo);
        if (hi - lo < n && lo < n / 2 && hi > n / 2) straddling.fetch_add(1);
      });
      EXPECT_EQ(total.load(), n) << "n " << n << " grain " << grain;
      EXPECT_EQ(straddling.load(), 0) << "n " << n << " grain " << grain;
    }
  }
}

// A job is cut into up to chunks_per_thread chunks per thread (4 unless the kernel asks): 64
// units of grain 1 on two threads are 8 chunks of 8 by default, 32 of 2 at 16 a thread, never
// more chunks than units, and the threads' shares stay whole either way.
TEST(BackendParallelFor, ChunksPerThreadSetsHowFinelyAJobIsCut) {
  ThreadsGuard threads(2);
  auto chunk_sizes = [](int64_t n, int64_t chunks_per_thread) {
    std::mutex mutex;
    std::multiset<int64_t> sizes;
    int64_t straddling = 0;
    cpu::parallel_for(
        n, 1,
        [&](int64_t lo, int64_t hi) {
          const std::lock_guard<std::mutex> lock(mutex);
          sizes.insert(hi - lo);
          straddling += lo < n / 2 && hi > n / 2;
        },
        chunks_per_thread);
    EXPECT_EQ(straddling, 0) << "n " << n << " chunks_per_thread " << chunks_per_thread;
    return sizes;
  };
  auto repeated = [](int64_t count, int64_t size) {  // `count` chunks of `size` units
    const std::vector<int64_t> sizes(static_cast<size_t>(count), size);
    return std::multiset<int64_t>(sizes.begin(), sizes.end());
  };
  EXPECT_EQ(chunk_sizes(64, 4), repeated(8, 8));
  EXPECT_EQ(chunk_sizes(64, 16), repeated(32, 2));
  EXPECT_EQ(chunk_sizes(16, 16), repeated(16, 1));
  EXPECT_EQ(chunk_sizes(6, 16), repeated(6, 1));
}

// More threads than grains (3 rows of a layer_norm on a 16-core machine): some threads get no
// chunk, and no chunk is empty. (Empty chunks once made layer_norm's backward drop the weight
// gradient of the rows it had keyed under the same first row.)
TEST(BackendParallelFor, MoreThreadsThanGrainsGiveNoEmptyChunk) {
  ThreadsGuard threads(16);
  for (const int64_t n : {2, 3, 5, 15, 16, 17, 40}) {
    std::atomic<int64_t> total{0}, empty{0};
    cpu::parallel_for(n, 1, [&](int64_t lo, int64_t hi) {
      total.fetch_add(hi - lo);
      if (hi <= lo) empty.fetch_add(1);
    });
    EXPECT_EQ(total.load(), n) << "n " << n;
    EXPECT_EQ(empty.load(), 0) << "n " << n;
  }
}

TEST(BackendParallelFor, LayerNormGradientsWithMoreThreadsThanRows) {
  manual_seed(8);
  const Tensor x = randn({3, 8192}), g = randn({3, 8192});
  const Tensor w = randn({8192}), b = randn({8192});
  auto grads = [&] {
    Tensor xx = x.clone().requires_grad_(true), ww = w.clone().requires_grad_(true);
    Tensor bb = b.clone().requires_grad_(true);
    fused_layer_norm(xx, {8192}, ww, bb, 1e-5).backward(g);
    return std::vector<Tensor>{xx.grad(), ww.grad(), bb.grad()};
  };
  expect_same_bits(with_threads(1, grads), with_threads(16, grads), "gradient");
}

TEST(BackendParallelFor, WorkBelowTwoGrainsRunsOnTheCallerInOneCall) {
  ThreadsGuard threads(2);
  int calls = 0;
  const std::thread::id caller = std::this_thread::get_id();
  cpu::parallel_for(150, 100, [&](int64_t lo, int64_t hi) {
    ++calls;  // no other thread runs this, so a plain int is fine
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(lo, 0);
    EXPECT_EQ(hi, 150);
  });
  EXPECT_EQ(calls, 1);
  cpu::parallel_for(0, 1, [&](int64_t, int64_t) { ++calls; });  // nothing to do: not called
  EXPECT_EQ(calls, 1);
}

TEST(BackendParallelFor, NestedCallsRunSeriallyInsteadOfDeadlocking) {
  ThreadsGuard threads(2);
  std::atomic<int64_t> total{0};
  cpu::parallel_for(64, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      cpu::parallel_for(1000, 1, [&](int64_t a, int64_t b) { total.fetch_add(b - a); });
    }
  });
  EXPECT_EQ(total.load(), 64 * 1000);
}

TEST(BackendParallelFor, AnExceptionInAChunkReachesTheCallerAndThePoolStillWorks) {
  ThreadsGuard threads(2);
  EXPECT_THROW(cpu::parallel_for(1000, 1,
                                 [](int64_t lo, int64_t hi) {
                                   if (lo <= 500 && 500 < hi) throw std::runtime_error("chunk 500");
                                 }),
               std::runtime_error);
  std::atomic<int64_t> total{0};
  cpu::parallel_for(1000, 1, [&](int64_t lo, int64_t hi) { total.fetch_add(hi - lo); });
  EXPECT_EQ(total.load(), 1000);
}

TEST(BackendParallelFor, OneThreadRunsEverythingOnTheCaller) {
  ThreadsGuard threads(1);
  EXPECT_EQ(cpu::num_threads(), 1);
  const std::thread::id caller = std::this_thread::get_id();
  std::set<std::thread::id> seen;
  cpu::parallel_for(1 << 20, 1, [&](int64_t, int64_t) { seen.insert(std::this_thread::get_id()); });
  EXPECT_EQ(seen, std::set<std::thread::id>{caller});
  EXPECT_THROW(cpu::set_num_threads(0), Error);
}

// The kernels split rows (or elements) between threads, never the arithmetic within one, and
// where partial sums are added (layer norm's weight and bias gradients) the blocks are fixed by
// the shape: the results are bit for bit those of one thread.
TEST(BackendParallelFor, KernelsGiveTheSameBitsWithOneTwoAndThreeThreads) {
  manual_seed(7);
  const Tensor x = randn({512, 384});
  const Tensor bias = randn({384});
  const Tensor gamma = randn({384});
  const Tensor g = randn({512, 384});
  auto run = [&] {
    Tensor a = (x * 1.5 + bias).relu();
    Tensor s = softmax(x, -1);
    Tensor xx = x.clone().requires_grad_(true), ww = gamma.clone().requires_grad_(true);
    Tensor bb = bias.clone().requires_grad_(true);
    Tensor ln = fused_layer_norm(xx, {384}, ww, bb, 1e-5);
    ln.backward(g);
    Tensor col = x.sum({0});
    return std::vector<Tensor>{a, s, ln.detach(), col, xx.grad(), ww.grad(), bb.grad()};
  };
  for (const CpuFeatures features : {detected_cpu_features(), CpuFeatures::Avx2}) {
    CpuFeaturesGuard cap(features);
    const auto one = with_threads(1, run);
    expect_same_bits(one, with_threads(2, run), "result, 2 threads");
    expect_same_bits(one, with_threads(3, run), "result, 3 threads");
  }
}

// A matrix product's shape, [M, K]·[K, N].
struct ProductShape {
  int64_t M, N, K;
};

// The product of one shape in every layout (each operand plain or transposed, with and without
// accumulating into c, one product or a batch of two): `check` gets it computed with the pool at
// one thread, at two and at three, and the float64 product rounded to float.
void for_each_layout(
    const ProductShape& c,
    const std::function<void(const std::vector<Tensor>& by_threads, const Tensor& exact)>& check) {
  for (const int64_t batch : {int64_t{1}, int64_t{2}}) {
    for (const bool trans_a : {false, true}) {
      for (const bool trans_b : {false, true}) {
        for (const bool accumulate : {false, true}) {
          const Tensor a_data = trans_a ? randn({batch, c.K, c.M}) : randn({batch, c.M, c.K});
          const Tensor b_data = trans_b ? randn({batch, c.N, c.K}) : randn({batch, c.K, c.N});
          const Tensor a = trans_a ? a_data.transpose(1, 2) : a_data;
          const Tensor b = trans_b ? b_data.transpose(1, 2) : b_data;
          const Tensor start = randn({batch, c.M, c.N});
          auto product = [&](int threads) {
            ThreadsGuard guard(threads);
            Tensor out = start.clone();
            backend_for(Device::cpu()).gemm(a, b, out, accumulate);
            return out;
          };
          SCOPED_TRACE(fmt::format("batch {} M {} N {} K {} a {} b {} accumulate {}", batch, c.M,
                                   c.N, c.K, trans_a ? "T" : "N", trans_b ? "T" : "N", accumulate));
          const Tensor exact =
              (a.to(kFloat64).matmul(b.to(kFloat64)) +
               (accumulate ? start.to(kFloat64) : zeros({batch, c.M, c.N}, kFloat64)))
                  .to(kFloat32);
          check({product(1), product(2), product(3)}, exact);
        }
      }
    }
  }
}

// Every product is cut into blocks by its shape alone (gemm.cpp, split_gemm; Note [Blocks fixed
// by the shape] in parallel.h), and the blocks are spread over the threads: the bits are the
// same with one, two and three threads, whatever OpenBLAS's kernels. Mid-sized products, cut by
// rows ([800, 32]·[32, 32]), by columns ([16, 64]·[64, 1000]) or, for a weight gradient that
// sums over 800 rows, into partial products added in block order ([32, 800]·[800, 48]); large
// ones (>= 16 MFLOP), cut by rows ([512, 128]·[128, 128], a forward), columns ([64, 128]·[128,
// 1024]) and for a weight gradient summed over 512 rows ([128, 512]·[512, 128]). In [64,
// 1024]·[1024, 128] each half of the columns would fit narrow_gemm, whose sums round
// differently from OpenBLAS's. Each with each operand plain or transposed, with and without
// accumulating into c, alone and in a batch of two; on the AVX-512 paths and the portable ones.
TEST(BackendParallelFor, ProductsAreTheSameBitsWithOneTwoAndThreeThreads) {
  manual_seed(5);
  for (const CpuFeatures features : {detected_cpu_features(), CpuFeatures::Avx2}) {
    CpuFeaturesGuard cap(features);
    SCOPED_TRACE(cpu_features_name(cpu_features()));
    for (const ProductShape c :
         {ProductShape{800, 32, 32}, ProductShape{16, 1000, 64}, ProductShape{32, 48, 800},
          ProductShape{512, 128, 128}, ProductShape{64, 1024, 128}, ProductShape{128, 128, 512},
          ProductShape{64, 128, 1024}}) {
      const double flops = 2.0 * static_cast<double>(c.M * c.N * c.K);
      ASSERT_TRUE(flops < 4e6 || flops >= 16e6) << "a mid-sized or a large product, not between";
      for_each_layout(c, [](const std::vector<Tensor>& by_threads, const Tensor& exact) {
        EXPECT_EQ(by_threads[1].to_vector<float>(), by_threads[0].to_vector<float>());
        EXPECT_EQ(by_threads[2].to_vector<float>(), by_threads[0].to_vector<float>());
        EXPECT_TRUE(testing::tensors_near(by_threads[0], exact, 1e-3, 1e-3));
      });
    }
  }
}

// The blocks of a product depend on its shape alone: a power of two, at most kMaxBlocks, one
// per min_block units of work at least.
TEST(BackendParallelFor, FixedBlocksDependOnTheWorkAlone) {
  EXPECT_EQ(cpu::fixed_blocks(0, 10), 1);
  EXPECT_EQ(cpu::fixed_blocks(19, 10), 1);
  EXPECT_EQ(cpu::fixed_blocks(20, 10), 2);
  EXPECT_EQ(cpu::fixed_blocks(79, 10), 4);
  EXPECT_EQ(cpu::fixed_blocks(80, 10), 8);
  EXPECT_EQ(cpu::fixed_blocks(1e12, 10), cpu::kMaxBlocks);
  for (const int threads : {1, 2, 3, 16}) {
    ThreadsGuard guard(threads);
    EXPECT_EQ(cpu::fixed_blocks(80, 10), 8) << threads;
  }
}

// ---- thread counts: bounded, and read strictly
// ---------------------------------------------------

TEST(BackendParallelThreads, AThreadCountIsOneWholeNumberInRange) {
  EXPECT_EQ(cpu::parse_thread_count("1", "T"), 1);
  EXPECT_EQ(cpu::parse_thread_count("16", "T"), 16);
  EXPECT_EQ(cpu::parse_thread_count("1024", "T"), cpu::kMaxThreads);
  for (const char* bad : {"0", "-3", "abc", "", " 2", "2 ", "2x", "+2", "0x10", "1025", "99999",
                          "99999999999999999999"}) {
    EXPECT_SG_ERROR(cpu::parse_thread_count(bad, "SCRATCHGRAD_NUM_THREADS"),
                    "SCRATCHGRAD_NUM_THREADS: expected a whole number of threads from 1 to 1024, "
                    "got '" +
                        std::string(bad) + "'");
  }
}

// The default is read from the environment when asked, whether or not the pool ever starts (the
// reference kernels never start it), so a program can report a typo up front.
TEST(BackendParallelThreads, TheDefaultComesFromTheEnvironmentReadStrictly) {
  const char* before = std::getenv("SCRATCHGRAD_NUM_THREADS");
  const std::optional<std::string> saved =
      before == nullptr ? std::nullopt : std::optional<std::string>(before);
  ::setenv("SCRATCHGRAD_NUM_THREADS", "3", 1);
  EXPECT_EQ(cpu::default_num_threads(), 3);
  ::setenv("SCRATCHGRAD_NUM_THREADS", "", 1);  // empty: unset, one thread per CPU it may use
  EXPECT_EQ(cpu::default_num_threads(), std::clamp(cpu::available_cpus(), 1, cpu::kMaxThreads));
  ::setenv("SCRATCHGRAD_NUM_THREADS", "abc", 1);
  EXPECT_SG_ERROR(cpu::default_num_threads(),
                  "SCRATCHGRAD_NUM_THREADS: expected a whole number of threads from 1 to 1024, "
                  "got 'abc'");
  if (saved) {
    ::setenv("SCRATCHGRAD_NUM_THREADS", saved->c_str(), 1);
  } else {
    ::unsetenv("SCRATCHGRAD_NUM_THREADS");
  }
}

// The CPUs the process may run on, not the machine's: a container or `taskset -c 0` gives it one.
TEST(BackendParallelThreads, TheCpusAreThoseTheProcessMayRunOn) {
  const int all = cpu::available_cpus();
  EXPECT_GE(all, 1);
  EXPECT_LE(all, std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &before)) {
      CPU_SET(c, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);  // this thread only
  EXPECT_EQ(cpu::available_cpus(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(before), &before), 0);
  EXPECT_EQ(cpu::available_cpus(), all);
}

// More threads than CPUs: a worker watching for the next job held a CPU that a thread with work
// needed, and 256 threads on 2 CPUs made the copy task's tiny step 1.8 s instead of 3 ms. The
// watchers now yield their CPU when the pool has more threads than the process has CPUs.
TEST(BackendParallelThreads, MoreThreadsThanCpusStillRunJobsPromptly) {
  const int before = cpu::num_threads();
  const int threads = std::min(cpu::kMaxThreads, 128 * cpu::available_cpus());
  cpu::set_num_threads(threads);
  std::atomic<int64_t> visited{0};
  const auto start = std::chrono::steady_clock::now();
  for (int job = 0; job < 1000; ++job) {
    cpu::parallel_for(4096, 1, [&](int64_t lo, int64_t hi) { visited += hi - lo; });
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cpu::set_num_threads(before);
  EXPECT_EQ(visited.load(), 1000 * 4096);
  // 0.1 s on 2 CPUs (256 threads) with the yield; without it, 200 such jobs took 2.5 s.
  EXPECT_LT(seconds, 5.0) << threads << " threads took " << seconds << " s for 1000 small jobs";
}

TEST(BackendParallelThreads, SetNumThreadsAndSetBlasThreadsRefuseCountsOutOfRange) {
  const int saved = cpu::num_threads();
  EXPECT_SG_ERROR(cpu::set_num_threads(0),
                  "set_num_threads: threads must be from 1 to 1024, got 0");
  EXPECT_SG_ERROR(cpu::set_num_threads(99999), "got 99999");
  EXPECT_EQ(cpu::num_threads(), saved);  // a refused count changes nothing
  EXPECT_SG_ERROR(set_blas_threads(0), "set_blas_threads: threads must be from 1 to 1024, got 0");
  EXPECT_SG_ERROR(set_blas_threads(4096), "got 4096");
}

// Bytes of address space this process has mapped (/proc/self/statm's first field, in pages).
[[maybe_unused]] size_t address_space_in_use() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// In a child process (forked with no pool): under an address-space limit with room for a few
// thread stacks, asks for a pool of 1024 threads, then for 2. Writes what happened to `out` and
// exits 0 when the first was a clear error and the second worked.
// (Unused, and compiled, in a build with AddressSanitizer, where the test skips.)
[[noreturn, maybe_unused]] void start_a_pool_under_an_address_space_limit(int out) {
  const auto say = [out](const std::string& text) {
    [[maybe_unused]] const ssize_t written = ::write(out, text.data(), text.size());
  };
  ::alarm(60);  // a hang ends the child, and the test fails on the signal
  rlimit limit{};
  ::getrlimit(RLIMIT_AS, &limit);
  limit.rlim_cur = address_space_in_use() + (size_t{64} << 20);
  ::setrlimit(RLIMIT_AS, &limit);
  void* probe = ::mmap(nullptr, size_t{256} << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe != MAP_FAILED) {
    say("the address-space limit does not hold here");
    ::_exit(0);
  }
  cpu::set_num_threads(cpu::kMaxThreads);
  try {
    cpu::parallel_for(int64_t{1} << 20, 1, [](int64_t, int64_t) {});
    say("1024 threads started under the limit");
    ::_exit(1);
  } catch (const Error& e) {
    say(e.what());
  }
  cpu::set_num_threads(2);  // the pool is usable again with a count it can start
  std::atomic<int64_t> visited{0};
  cpu::parallel_for(int64_t{1} << 16, 1, [&](int64_t lo, int64_t hi) { visited += hi - lo; });
  ::_exit(visited.load() == (int64_t{1} << 16) ? 0 : 1);
}

// A pool that cannot start its threads is an sg::Error naming the thread and what to change, and
// the program goes on (a joinable std::thread destroyed during the unwinding used to end it).
TEST(BackendParallelThreads, APoolThatCannotStartItsThreadsIsAClearError) {
#if SG_TEST_WITH_ASAN
  GTEST_SKIP() << "AddressSanitizer needs terabytes of address space: no limit can be set";
#else
  const int saved = cpu::num_threads();
  cpu::set_num_threads(1);
  cpu::num_threads();  // the pool's threads are joined here: the child starts with none
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipe_ends[0]);
    start_a_pool_under_an_address_space_limit(pipe_ends[1]);
  }
  ::close(pipe_ends[1]);
  std::string said;
  char buffer[512];
  for (ssize_t n; (n = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0;) said.append(buffer, n);
  ::close(pipe_ends[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  cpu::set_num_threads(saved);
  if (said == "the address-space limit does not hold here") {
    GTEST_SKIP() << "qemu-user keeps RLIMIT_AS for itself: " << said;
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal " << WTERMSIG(status) << ": "
                                 << said;
  EXPECT_EQ(WEXITSTATUS(status), 0) << said;
  EXPECT_NE(said.find("parallel: cannot start thread "), std::string::npos) << said;
  EXPECT_NE(said.find(" of 1024 ("), std::string::npos) << said;
  EXPECT_NE(said.find("); ask for fewer with set_num_threads or SCRATCHGRAD_NUM_THREADS"),
            std::string::npos)
      << said;
#endif
}

}  // namespace
}  // namespace sg
