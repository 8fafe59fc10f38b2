// What the g2p tests share: the committed dictionary slice and a fresh directory per run.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

namespace g2p::testing {

inline std::string fixture() { return std::string(SG_TEST_DATA_DIR) + "/cmudict_slice.dict"; }

inline std::string temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const std::string dir =
      (fs::temp_directory_path() / fmt::format("sg_g2p_{}_{}", name, ::getpid())).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace g2p::testing
