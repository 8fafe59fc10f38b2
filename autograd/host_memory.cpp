#include "autograd/host_memory.h"

#include <fmt/format.h>

#include <algorithm>
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

// A "key value" line's value in memory.stat's text.
std::optional<uint64_t> stat_value(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string name, value; lines >> name >> value;) {
    if (name != key) continue;
    uint64_t v = 0;
    const auto [next, error] = std::from_chars(value.data(), value.data() + value.size(), v);
    return error == std::errc() && next == value.data() + value.size() ? std::optional(v)
                                                                       : std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

namespace detail {

std::optional<uint64_t> cgroup_headroom(const std::string& self_cgroup, const std::string& root) {
  // The memory controller's line: v1 "4:memory:/path" (it enforces where both are mounted), else
  // v2 "0::/path".
  std::string v1, v2;
  std::istringstream lines(self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (("," + controllers + ",").find(",memory,") != std::string::npos) v1 = path;
    if (line.rfind("0::", 0) == 0) v2 = path;
  }
  const auto under = [&](const std::string& dir, const std::string& path) {
    return root + dir + (path == "/" ? std::string() : path);
  };
  std::optional<uint64_t> limit, used, cache;
  if (!v1.empty()) {
    const std::string dir = under("/memory", v1);
    limit = number_in_file(dir + "/memory.limit_in_bytes");
    used = number_in_file(dir + "/memory.usage_in_bytes");
    cache = stat_value(read_file(dir + "/memory.stat"), "cache");
  } else if (!v2.empty()) {
    const std::string dir = under("", v2);
    limit = number_in_file(dir + "/memory.max");  // "max": no limit
    used = number_in_file(dir + "/memory.current");
    cache = stat_value(read_file(dir + "/memory.stat"), "file");
  }
  if (!limit || !used) return std::nullopt;
  // Page cache counts as used, but the kernel reclaims it before it kills anything.
  const uint64_t held = *used - std::min(*used, cache.value_or(0));
  return *limit > held ? *limit - held : 0;
}

}  // namespace detail

namespace {

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
  const auto headroom = detail::cgroup_headroom(read_file("/proc/self/cgroup"), "/sys/fs/cgroup");
  if (headroom && *headroom < m.available)
    m = {*headroom, "the cgroup's memory limit less what it holds apart from page cache"};
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
