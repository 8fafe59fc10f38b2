#include <sys/wait.h>

#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "nn/safetensors.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"

// Our files against an independent reader and writer: scripts/check_safetensors.py, which parses
// the format by hand with Python's struct and json and builds tensors with torch.frombuffer.
namespace sg::nn {
namespace {

using sg::testing::bit_identical;
using sg::testing::read_bytes;
using sg::testing::TempDir;

std::string check_script() {
  auto root = std::filesystem::path(SG_GOLDEN_DIR).parent_path().parent_path();
  return (root / "scripts" / "check_safetensors.py").string();
}

// Runs the script; false when python3-torch is missing (the script then exits with 77).
bool run_check_script(const std::string& args) {
  std::string command = "/usr/bin/python3 " + check_script() + " " + args;
  int status = std::system(command.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) return false;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command << " failed";
  return true;
}

TEST(SerializeTorchInterop, PyTorchReadsOurFiles) {
  TempDir dir;
  NamedTensors tensors = {
      {"f32", from_vector<float>({1.5f, -0.0f, 0.1f, 1e-30f, -3e38f, 7.0f}, {3, 2})},
      {"f64", from_vector<double>({0.1, -1e300, 1.0 / 3.0})},
      {"bf16", from_vector<float>({3.140625f, -0.0f, 1e-30f, -3e38f, 65536.0f, 7.0f}, {2, 3},
                                  kBFloat16)},  // (the script's JSON cannot carry inf)
      {"i64", from_vector<int64_t>(
                  {std::numeric_limits<int64_t>::min(), 0, std::numeric_limits<int64_t>::max()})},
      {"mask", from_vector<bool>({true, false, true, true}, {2, 1, 2})},
      {"scalar", scalar_tensor(-2.5)},
      {"empty", zeros({2, 0}, kInt64)}};
  Metadata metadata{{"config", "d_model=32"}, {"step", "7"}};
  save_safetensors(dir / "ours.safetensors", tensors, metadata);
  if (!run_check_script("read " + (dir / "ours.safetensors") + " > " + (dir / "read.json"))) {
    GTEST_SKIP() << "needs Debian's python3-torch (/usr/bin/python3)";
  }
  if (HasFailure()) return;  // the script failed: reported above
  auto report = nlohmann::json::parse(read_bytes(dir / "read.json"));
  EXPECT_EQ(report["metadata"].get<Metadata>(), metadata);
  NamedTensors seen;
  for (const auto& [name, t] : tensors) {
    const auto& entry = report["tensors"][name];
    auto shape = entry["shape"].get<Shape>();
    const auto& values = entry["values"];
    DType dtype = t.dtype();
    Tensor v = dtype == kInt64  ? from_vector(values.get<std::vector<int64_t>>(), shape)
               : dtype == kBool ? from_vector(values.get<std::vector<bool>>(), shape)
                                : from_vector(values.get<std::vector<double>>(), shape, dtype);
    seen.emplace_back(name, v);
  }
  EXPECT_TRUE(bit_identical(seen, tensors));
}

TEST(SerializeTorchInterop, WeReadPyTorchFiles) {
  TempDir dir;
  if (!run_check_script("write " + (dir / "torch.safetensors"))) {
    GTEST_SKIP() << "needs Debian's python3-torch (/usr/bin/python3)";
  }
  if (HasFailure()) return;  // the script failed: reported above
  SafetensorsFile file = load_safetensors(dir / "torch.safetensors");
  // The reference_tensors() of the script, in the order of their data (reverse name order).
  NamedTensors expected = {
      {"scalar", scalar_tensor(7.0, kFloat64)},
      {"mask", from_vector<bool>({true, false, false, true}, {2, 2})},
      {"i64", from_vector<int64_t>({std::numeric_limits<int64_t>::min(), -1, 0,
                                    std::numeric_limits<int64_t>::max()})},
      {"f64", from_vector<double>({0, 2, 4, 1, 3, 5}, {2, 3}) / 3.0},
      {"f32", from_vector<double>({1.5, -2.25, 3.0, 0.1, -0.0, 1e-30}, {2, 3}, kFloat32)},
      {"empty", zeros({0, 3})},
      // PyTorch rounded these from float32; we must read its bits, and round alike.
      {"bf16", from_vector<double>(
                   {3.14159, -0.0, 0.1, 1e-30, -3e38, std::numeric_limits<double>::infinity()},
                   {2, 3}, kBFloat16)}};
  EXPECT_TRUE(bit_identical(file.tensors, expected));
  EXPECT_EQ(file.metadata.at("written_by").substr(0, 6), "torch ");
}

}  // namespace
}  // namespace sg::nn
