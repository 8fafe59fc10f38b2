#include "train/output_paths.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "autograd/error.h"
#include "nn/atomic_file.h"

namespace sg::train {

namespace fs = std::filesystem;

namespace {

// Absolute, links resolved where they exist, without "." or ".." or a trailing separator.
fs::path normalized(const std::string& path) {
  std::error_code error;
  fs::path p = fs::weakly_canonical(fs::absolute(path), error).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (fs::exists(a, error) && fs::exists(b, error)) {
    const bool same = fs::equivalent(a, b, error);
    if (!error) return same;
  }
  return normalized(a) == normalized(b);
}

void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& kept) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& out = outputs[i];
    if (out.path.empty()) continue;
    for (const NamedPath& other : kept) {
      SG_CHECK(other.path.empty() || !same_file(out.path, other.path),
               "{} {} is {} ({}): writing there would replace it; write elsewhere", out.flag,
               out.path, other.flag, other.path);
    }
    for (size_t j = 0; j < i; ++j) {
      SG_CHECK(outputs[j].path.empty() || !same_file(out.path, outputs[j].path),
               "{} {} is also {}: each output needs a file of its own", out.flag, out.path,
               outputs[j].flag);
    }
  }
}

bool is_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t length = 0;  // safetensors: an 8-byte little-endian header length, then the header
  if (!in.read(reinterpret_cast<char*>(&length), sizeof(length)) || length < 2 ||
      length > (uint64_t{100} << 20)) {
    return false;
  }
  std::string header(static_cast<size_t>(length), '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(length))) return false;
  const nlohmann::json j = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  const auto metadata = j.find("__metadata__");
  return metadata != j.end() && metadata->is_object() &&
         (metadata->contains("format") || metadata->contains("step"));
}

void check_replaced_output(const NamedPath& output, const std::vector<NamedPath>& kept) {
  if (output.path.empty()) return;
  nn::check_can_replace(output.path, output.flag);
  SG_CHECK(!is_checkpoint(output.path),
           "{} {} is a checkpoint (a trained model or a run's state): an output never replaces "
           "one; write elsewhere",
           output.flag, output.path);
  check_outputs({output}, kept);
}

void check_run_outputs(const std::string& run_dir, const std::string& metrics_json,
                       const std::string& log_jsonl, std::vector<NamedPath> inputs,
                       const std::vector<std::string>& run_files) {
  check_replaced_output({"--metrics-json", metrics_json}, {});
  const std::vector<NamedPath> outputs{{"--metrics-json", metrics_json},
                                       {"--log-jsonl", log_jsonl}};
  for (const NamedPath& out : outputs) {
    if (out.path.empty()) continue;
    const fs::path path(out.path);
    // The run's checkpoints: model, last, averaged, checkpoint-<step>.
    SG_CHECK(path.extension() != ".safetensors" ||
                 !same_file(path.has_parent_path() ? path.parent_path().string() : ".", run_dir),
             "{} {} is a checkpoint's name in the run directory {}: writing there would replace "
             "one; write elsewhere",
             out.flag, out.path, run_dir);
  }
  inputs.push_back({"--out", run_dir});
  for (const std::string& name : run_files) {
    inputs.push_back({fmt::format("the run's {}", name), (fs::path(run_dir) / name).string()});
  }
  check_outputs(outputs, inputs);
  check_can_append(log_jsonl, "--log-jsonl");  // last: it creates the log's directory
}

void check_can_append(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::exists(status)) {
    // A FIFO or a device is written to, not replaced (a log may stream to a reader); a directory
    // cannot be.
    SG_CHECK(!fs::is_directory(status), "{}: cannot append to {}: it is a directory", flag, path);
    return;
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, error);
    SG_CHECK(!error && fs::is_directory(parent), "{}: cannot create the directory of {}: {}", flag,
             path, error ? error.message() : "a file is in the way");
  }
}

}  // namespace sg::train
