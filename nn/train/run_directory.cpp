#include "nn/train/run_directory.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>

namespace sg::train {

namespace fs = std::filesystem;

RunDirectory::RunDirectory(std::string dir) : dir_(std::move(dir)) {
  SG_CHECK(!dir_.empty(), "RunDirectory: the directory name is empty");
}

void RunDirectory::prepare(bool resume, bool overwrite) const {
  SG_CHECK(!(resume && overwrite), "--resume and --overwrite exclude each other");
  SG_CHECK(!fs::exists(dir_) || fs::is_directory(dir_), "{} exists and is not a directory", dir_);
  fs::create_directories(dir_);
  remove_stale_temporaries(dir_);
  if (resume) return;
  for (const std::string& path : {last(), best(), legacy_optimizer()}) {
    if (!fs::exists(path)) continue;
    SG_CHECK(overwrite,
             "{} already holds a run ({}): pass --resume to continue it or --overwrite to start "
             "over",
             dir_, path);
    fs::remove(path);
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
                             const nn::Metadata& metadata) const {
  save_checkpoint(last(), model, &optimizer, metadata);
  fs::remove(legacy_optimizer());  // an older version's optimizer file, superseded now
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
