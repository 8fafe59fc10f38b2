#include "autograd/host_memory.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <mutex>
#include <sstream>

namespace sg {

namespace {

std::mutex testing_mutex;
std::optional<HostMemory> memory_for_testing;

// A "Key:   1234 kB" line's value in bytes, from /proc/meminfo's text.
std::optional<uint64_t> meminfo_bytes(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(key + ":", 0) != 0) continue;
    const size_t digits = line.find_first_not_of(' ', key.size() + 1);
    uint64_t kib = 0;
    if (digits == std::string::npos) return std::nullopt;
    const auto [next, error] =
        std::from_chars(line.data() + digits, line.data() + line.size(), kib);
    if (error != std::errc() || next == line.data() + digits) return std::nullopt;
    return kib * 1024;
  }
  return std::nullopt;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

std::optional<uint64_t> number_in_file(const std::string& path) {
  const std::string text = read_file(path);
  uint64_t value = 0;
  const auto [next, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || next == text.data()) return std::nullopt;  // "max", or no file
  return value;
}

// What the process's cgroup (v2: the "0::/path" line of /proc/self/cgroup) still allows.
std::optional<uint64_t> cgroup_headroom() {
  const std::string groups = read_file("/proc/self/cgroup");
  const size_t at = groups.rfind("0::", 0) == 0 ? 0 : groups.find("\n0::");
  if (at == std::string::npos) return std::nullopt;
  const size_t start = groups.find("::", at) + 2;
  const std::string path = groups.substr(start, groups.find('\n', start) - start);
  const std::string dir = "/sys/fs/cgroup" + (path == "/" ? std::string() : path);
  const auto limit = number_in_file(dir + "/memory.max");
  const auto used = number_in_file(dir + "/memory.current");
  if (!limit || !used) return std::nullopt;
  return *limit > *used ? *limit - *used : 0;
}

std::string gib(uint64_t bytes) {
  return bytes >= (uint64_t{1} << 30)
             ? fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1 << 30))
             : fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

std::optional<HostMemory> available_host_memory() {
  {
    const std::lock_guard<std::mutex> lock(testing_mutex);
    if (memory_for_testing) return memory_for_testing;
  }
  const std::string meminfo = read_file("/proc/meminfo");
  const auto available = meminfo_bytes(meminfo, "MemAvailable");
  if (!available) return std::nullopt;
  HostMemory m{*available + meminfo_bytes(meminfo, "SwapFree").value_or(0),
               "MemAvailable + SwapFree"};
  if (const auto headroom = cgroup_headroom(); headroom && *headroom < m.available)
    m = {*headroom, "the cgroup's memory.max less its memory.current"};
  return m;
}

void check_host_allocation(uint64_t nbytes, uint64_t reusable, const std::string& what) {
  const std::optional<HostMemory> memory = available_host_memory();
  if (!memory) return;
  const uint64_t left = memory->available + reusable;
  if (nbytes <= left && left - nbytes >= kHostMemoryReserve) return;
  throw OutOfMemoryError(fmt::format(
      "{} needs {}; {} of memory is left ({}{}), and {} stays free for what is not a tensor", what,
      gib(nbytes), gib(left), memory->source,
      reusable > 0 ? fmt::format(", and {} the allocator keeps for reuse", gib(reusable)) : "",
      gib(kHostMemoryReserve)));
}

namespace detail {

void set_host_memory_for_testing(std::optional<HostMemory> memory) {
  const std::lock_guard<std::mutex> lock(testing_mutex);
  memory_for_testing = std::move(memory);
}

}  // namespace detail

}  // namespace sg
