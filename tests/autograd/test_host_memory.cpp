// A tensor the machine cannot hold is an error naming it (autograd/host_memory.h), not a process
// the out-of-memory killer ends. The memory left is set by a test hook here: no test allocates
// more than 300 MiB.
#include "autograd/host_memory.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "autograd/backend/backend.h"
#include "autograd/backend/cpu_fast/caching_allocator.h"
#include "tests/support/testing.h"

namespace sg {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The memory left as the factory sees it, for one test.
struct HostMemoryGuard {
  explicit HostMemoryGuard(uint64_t bytes) {
    detail::set_host_memory_for_testing(HostMemory{bytes, "set by the test"});
  }
  ~HostMemoryGuard() { detail::set_host_memory_for_testing(std::nullopt); }
};

TEST(FactoryHostMemory, TheMachinesMemoryIsRead) {
  const std::optional<HostMemory> memory = available_host_memory();
  ASSERT_TRUE(memory.has_value()) << "/proc/meminfo has no MemAvailable";
  EXPECT_GT(memory->available, 0u);
  EXPECT_FALSE(memory->source.empty());
}

// A cgroup file system as the kernel shows it, v1 and v2, in a directory of the test's own.
TEST(FactoryHostMemory, AMemoryCgroupsLimitLessWhatItHoldsApartFromPageCache) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / fmt::format("sg-cgroup-{}", ::getpid());
  const auto write = [&](const std::string& file, const std::string& text) {
    fs::create_directories((root / file).parent_path());
    std::ofstream(root / file) << text;
  };
  const uint64_t gib = uint64_t{1} << 30;
  // v2: 8 GiB limit, 5 GiB used of which 2 GiB is page cache: 5 GiB left.
  write("job/memory.max", "8589934592\n");
  write("job/memory.current", "5368709120\n");
  write("job/memory.stat", "anon 3221225472\nfile 2147483648\n");
  EXPECT_EQ(detail::cgroup_headroom("0::/job\n", root.string()), 5 * gib);
  write("job/memory.max", "max\n");  // no limit
  EXPECT_EQ(detail::cgroup_headroom("0::/job\n", root.string()), std::nullopt);
  // v1 (memory controller on its own line; it enforces where v2 is mounted too): 4 GiB limit,
  // 3 GiB used of which 1 GiB is cache.
  write("memory/box/memory.limit_in_bytes", "4294967296\n");
  write("memory/box/memory.usage_in_bytes", "3221225472\n");
  write("memory/box/memory.stat", "cache 1073741824\nrss 2147483648\n");
  EXPECT_EQ(detail::cgroup_headroom("4:memory:/box\n3:cpuset:/\n0::/job\n", root.string()),
            2 * gib);
  // Used above the limit (the kernel is reclaiming): nothing left, not a wrapped-around number.
  write("memory/box/memory.usage_in_bytes", "6442450944\n");
  write("memory/box/memory.stat", "cache 0\n");
  EXPECT_EQ(detail::cgroup_headroom("4:memory:/box\n", root.string()), 0u);
  EXPECT_EQ(detail::cgroup_headroom("", root.string()), std::nullopt);
  EXPECT_EQ(detail::cgroup_headroom("0::/absent\n", root.string()), std::nullopt);
  fs::remove_all(root);
}

TEST(FactoryHostMemory, ATensorThatCannotFitIsAnErrorNamingIt) {
  CpuKernelsGuard reference(CpuKernels::Reference);  // no cache: every byte comes from the system
  const HostMemoryGuard left(300 * kMiB);
  // 256 MiB would leave 44 MiB, less than the reserve kept for what is not a tensor.
  EXPECT_THROW(zeros({64, 1024, 1024}), OutOfMemoryError);
  EXPECT_SG_ERROR(empty({64, 1024, 1024}),
                  "empty: a float32 tensor of shape [64, 1024, 1024] needs 256.00 MiB; 300.00 MiB "
                  "of memory is left (set by the test), and 256.00 MiB stays free");
  EXPECT_SG_ERROR(randn({1 << 30}, TensorOptions().dtype(kFloat64)),
                  "a float64 tensor of shape [1073741824] needs 8.00 GiB; 300.00 MiB");
  EXPECT_NO_THROW(empty({1024, 1024}));      // 4 MiB: below the size that is checked
  EXPECT_NO_THROW(empty({11, 1024, 1024}));  // 44 MiB, still below it
}

TEST(FactoryHostMemory, WhatTheCachingAllocatorKeepsCountsAsLeftAndIsReleasedWhenNeeded) {
  CpuKernelsGuard fast(CpuKernels::Fast);
  cpu::release_cached_memory();
  const Shape mib_200 = {200 * 1024 * 256}, mib_210 = {210 * 1024 * 256};
  { Tensor kept = empty(mib_200); }  // freed into the cache
  ASSERT_GE(cpu::memory_stats().cached_bytes, 200 * kMiB);
  EXPECT_EQ(backend_for(kCPU).reusable_bytes(), cpu::memory_stats().cached_bytes);
  {
    // 300 MiB left: 200 MiB more would leave less than the reserve, but the cache holds them.
    const HostMemoryGuard left(300 * kMiB);
    EXPECT_NO_THROW(empty(mib_200));
  }
  {
    // 400 MiB left and 200 MiB cached: 210 MiB fit, but not in the cached segment. The new one
    // comes from a machine that is short (less than 210 MiB and the reserve left), so the cache
    // goes back to the system first.
    const HostMemoryGuard left(400 * kMiB);
    EXPECT_NO_THROW(empty(mib_210));
    EXPECT_LT(cpu::memory_stats().cached_bytes, 400 * kMiB);  // the new one alone is kept
  }
  cpu::release_cached_memory();
}

}  // namespace
}  // namespace sg
