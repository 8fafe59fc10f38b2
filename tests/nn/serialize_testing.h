// Helpers for the checkpoint tests: a temporary directory per test, raw file bytes, and an exact
// comparison of named tensors.
//   sg::testing::TempDir dir;                       // removed with its contents afterwards
//   save(model, dir / "ckpt.safetensors");
//   EXPECT_TRUE(bit_identical(load_safetensors(dir / "ckpt.safetensors").tensors, expected));
#pragma once

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "nn/module.h"

namespace sg::testing {

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("sg_") + info->test_suite_name() + "_" + info->name() + "_" +
                       std::to_string(::getpid());
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& file) const { return (path_ / file).string(); }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Same name, dtype, shape and bytes: NaN payloads and -0.0 included.
inline ::testing::AssertionResult bit_identical(const nn::NamedTensors& actual,
                                                const nn::NamedTensors& expected) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << actual.size() << " tensors vs " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const auto& [name, a] = actual[i];
    Tensor e = expected[i].second.contiguous();
    if (name != expected[i].first || a.dtype() != e.dtype() || a.shape() != e.shape() ||
        std::memcmp(a.contiguous().raw_data(), e.raw_data(),
                    static_cast<size_t>(e.numel()) * dtype_size(e.dtype())) != 0) {
      return ::testing::AssertionFailure()
             << "tensor " << i << " ('" << name << "' vs '" << expected[i].first << "') differs";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace sg::testing
