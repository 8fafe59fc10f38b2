#include "train/run_directory.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <utility>

namespace sg::train {

namespace fs = std::filesystem;

RunDirectory::RunDirectory(std::string dir) : dir_(std::move(dir)) {
  SG_CHECK(!dir_.empty(), "RunDirectory: the directory name is empty");
}

RunLock::RunLock(RunLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

void RunDirectory::check_path(bool resume) const {
  // What is at the path, named in the error: std::filesystem's own message ("Too many levels of
  // symbolic links [runs]") says neither which flag nor what to do.
  std::error_code error;
  const fs::file_status status = fs::status(dir_, error);
  // (Nothing there, or a file where a parent should be: create() names that.)
  SG_CHECK(!error || error == std::errc::no_such_file_or_directory ||
               error == std::errc::not_a_directory,
           "--out {}: {}", dir_, error.message());
  SG_CHECK(!fs::exists(status) || fs::is_directory(status),
           "--out {} exists and is not a directory", dir_);
  SG_CHECK(fs::exists(status) || !fs::is_symlink(fs::symlink_status(dir_, error)),
           "--out {} is a link to {}, which does not exist", dir_,
           fs::read_symlink(dir_, error).string());
  // A resume reads a run that is there; it never makes an empty directory first.
  SG_CHECK(!resume || fs::exists(last()), "--resume: no checkpoint at {}", last());
}

void RunDirectory::create() const {
  std::error_code error;
  fs::create_directories(dir_, error);
  SG_CHECK(!error, "--out {}: cannot create the directory: {}", dir_, error.message());
}

RunLock RunDirectory::lock(bool resume) const {
  check_path(resume);
  create();
  const std::string path = dir_ + "/.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  SG_CHECK(fd >= 0, "--out {}: cannot open its lock file {}: {}", dir_, path, std::strerror(errno));
  RunLock held(fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    SG_CHECK(errno == EWOULDBLOCK, "--out {}: cannot lock {}: {}", dir_, path,
             std::strerror(errno));
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    SG_FAIL(
        "--out {}: another process{} is training in this directory (it holds {}); wait for "
        "it to end, or give another --out",
        dir_,
        n > 0 ? fmt::format(" (pid {})", excerpt(std::string(pid, static_cast<size_t>(n)))) : "",
        path);
  }
  const std::string mine = std::to_string(::getpid());
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd, mine.data(), mine.size(), 0);
  }
  return held;
}

void RunDirectory::prepare(bool resume, bool overwrite,
                           const std::vector<std::string>& outputs) const {
  SG_CHECK(!(resume && overwrite), "--resume and --overwrite exclude each other");
  check_path(resume);
  create();
  remove_stale_temporaries(dir_);
  if (resume) return;
  std::vector<std::string> files{last(), best(), legacy_optimizer(), averaged()};
  for (const auto& [_, path] : step_checkpoints()) files.push_back(path);
  for (const std::string& path : files) {
    if (!fs::exists(path)) continue;
    SG_CHECK(overwrite,
             "{} already holds a run ({}): pass --resume to continue it or --overwrite to start "
             "over",
             dir_, path);
    fs::remove(path);
  }
  for (const std::string& name : outputs) {
    SG_CHECK(!name.empty() && fs::path(name).filename() == name,
             "RunDirectory::prepare: output '{}' is not a file name in the run's directory", name);
    const fs::path path = fs::path(dir_) / name;
    if (fs::is_regular_file(fs::symlink_status(path))) fs::remove(path);
  }
}

Checkpoint RunDirectory::read_last() const {
  SG_CHECK(fs::exists(last()), "--resume: no checkpoint at {}", last());
  Checkpoint c = read_checkpoint(last());
  if (!c.optimizer.empty()) return c;
  SG_CHECK(fs::exists(legacy_optimizer()), "--resume: {} holds no optimizer state", last());
  nn::SafetensorsFile optim = nn::load_safetensors(legacy_optimizer());
  auto step = optim.metadata.find("step"), model_step = c.metadata.find("step");
  SG_CHECK(step != optim.metadata.end() && model_step != c.metadata.end() &&
               step->second == model_step->second,
           "--resume: {} (step {}) and {} (step {}) were not written together (a run stopped "
           "between the two); refusing to resume from a mismatched pair",
           last(), model_step == c.metadata.end() ? "unknown" : model_step->second.substr(0, 20),
           legacy_optimizer(),
           step == optim.metadata.end() ? "unknown" : step->second.substr(0, 20));
  c.optimizer = std::move(optim.tensors);
  c.optimizer_path = legacy_optimizer();
  return c;
}

void RunDirectory::save_last(const nn::Module& model, const optim::Optimizer& optimizer,
                             const nn::Metadata& metadata,
                             const optim::ExponentialMovingAverage* ema) const {
  save_checkpoint(last(), model, &optimizer, metadata, ema);
  fs::remove(legacy_optimizer());  // an older version's optimizer file, superseded now
}

std::string RunDirectory::step_checkpoint(int64_t step) const {
  SG_CHECK(step >= 0, "RunDirectory: a step checkpoint's step must be >= 0, got {}", step);
  return fmt::format("{}/checkpoint-{}.safetensors", dir_, step);
}

std::optional<int64_t> RunDirectory::step_of(const std::string& filename) {
  const std::string prefix = "checkpoint-", suffix = ".safetensors";
  if (!filename.starts_with(prefix) || !filename.ends_with(suffix)) return std::nullopt;
  const char* first = filename.data() + prefix.size();
  const char* last = filename.data() + filename.size() - suffix.size();
  int64_t step = -1;
  auto [end, ec] = std::from_chars(first, last, step);
  if (ec != std::errc() || end != last || step < 0 ||
      filename != fmt::format("{}{}{}", prefix, step, suffix))
    return std::nullopt;
  return step;
}

std::vector<std::pair<int64_t, std::string>> RunDirectory::step_checkpoints() const {
  std::vector<std::pair<int64_t, std::string>> out;
  if (!fs::is_directory(dir_)) return out;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::optional<int64_t> step = step_of(entry.path().filename().string());
    if (step && entry.is_regular_file()) out.emplace_back(*step, entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<int64_t, std::string>> RunDirectory::newest_step_checkpoints(
    int64_t count) const {
  SG_CHECK(count >= 1, "RunDirectory: the newest {} step checkpoints: count must be >= 1", count);
  auto steps = step_checkpoints();
  if (steps.size() > static_cast<size_t>(count)) {
    steps.erase(steps.begin(), steps.end() - count);
  }
  return steps;
}

void RunDirectory::save_step(int64_t step, const nn::Module& model, const nn::Metadata& metadata,
                             int64_t keep) const {
  SG_CHECK(keep >= 1, "RunDirectory::save_step: keep must be >= 1, got {}", keep);
  save_checkpoint(step_checkpoint(step), model, nullptr, metadata);
  const auto steps = step_checkpoints();
  for (size_t i = 0; i + static_cast<size_t>(keep) < steps.size(); ++i) fs::remove(steps[i].second);
}

void RunDirectory::remove_steps_after(int64_t step) const {
  for (const auto& [s, path] : step_checkpoints()) {
    if (s > step) fs::remove(path);
  }
}

void check_resumable_to(const std::string& dir, int64_t reached, int64_t steps) {
  SG_CHECK(reached <= steps,
           "--resume: the run in {} is at step {} already, past --steps {}; give --steps {} or "
           "more to go on",
           dir, reached, steps, reached);
}

void remove_stale_temporaries(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp-");
    if (at == std::string::npos || !entry.is_regular_file()) continue;
    pid_t pid = 0;
    const char *first = name.data() + at + 5, *end_of_name = name.data() + name.size();
    auto [end, ec] = std::from_chars(first, end_of_name, pid);
    if (ec != std::errc() || end != end_of_name || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its writer may still be running
    std::error_code ignored;
    fs::remove(entry.path(), ignored);
  }
}

}  // namespace sg::train
