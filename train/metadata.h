// Reading a checkpoint's metadata (the string-to-string map of a safetensors file) strictly: every
// value parses in full or the error names the file and the key; JSON values are bounded in depth
// and size before they are parsed into anything.
//
//   sg::train::MetadataReader md(file.metadata, path);
//   md.expect_format("scratchgrad-copy-task-1", "a copy_task checkpoint");
//   int64_t step = md.integer("step");
//   std::map<std::string, std::string> config = md.with_prefix("config.");
//   std::vector<std::string> letters = md.strings("letters");
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/safetensors.h"

namespace sg::train {

class MetadataReader {
 public:
  // `source` names the file in every error.
  MetadataReader(const nn::Metadata& metadata, std::string source);

  // Refuses a file whose "format" entry is not `format` ("x is not <description>").
  void expect_format(const std::string& format, const std::string& description) const;

  bool has(const std::string& key) const { return metadata_.contains(key); }
  const std::string& text(const std::string& key) const;  // the value, which must be present
  int64_t integer(const std::string& key) const;
  uint64_t unsigned_integer(const std::string& key) const;
  double real(const std::string& key) const;
  bool boolean(const std::string& key) const;
  // A JSON value nested at most max_depth deep (deeper is refused while parsing, before anything
  // could recurse on it).
  nlohmann::json json(const std::string& key, int max_depth = 2) const;
  std::vector<std::string> strings(const std::string& key) const;  // a JSON list of strings

  // The entries whose key starts with `prefix`, the prefix removed ("config.layers" -> "layers").
  std::map<std::string, std::string> with_prefix(const std::string& prefix) const;
  const std::string& source() const { return source_; }

 private:
  const nn::Metadata& metadata_;
  std::string source_;
};

// A list of strings as metadata (a JSON list); every string must be valid UTF-8, or the error
// names `key` and the string.
std::string strings_to_json(const std::vector<std::string>& strings, const std::string& key);

}  // namespace sg::train
