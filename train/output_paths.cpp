#include "train/output_paths.h"

#include <filesystem>
#include <system_error>

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

void check_replaced_output(const NamedPath& output, const std::vector<NamedPath>& kept) {
  if (output.path.empty()) return;
  nn::check_can_replace(output.path, output.flag);
  check_outputs({output}, kept);
}

void check_can_append(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::exists(status)) {
    SG_CHECK(fs::is_regular_file(status), "{}: cannot append to {}: it is not a regular file", flag,
             path);
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
