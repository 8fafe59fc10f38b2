#include "nn/safetensors.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"

namespace sg::nn {
namespace {

using sg::testing::bit_identical;
using sg::testing::read_bytes;
using sg::testing::TempDir;
using sg::testing::write_bytes;

// A file from raw parts: 8-byte little-endian length, header text, data.
std::string make_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

NamedTensors every_dtype() {
  float nan_payload;
  uint32_t bits = 0x7fc01234;  // a NaN with a payload: must survive bit for bit
  std::memcpy(&nan_payload, &bits, sizeof bits);
  float f32_min = std::numeric_limits<float>::denorm_min();
  return {
      {"f32", from_vector<float>({1.5f, -0.0f, nan_payload, INFINITY, f32_min, 0.1f}, {2, 3})},
      {"f64", from_vector<double>({0.1, -1e300, std::numeric_limits<double>::denorm_min()})},
      {"i64", from_vector<int64_t>(
                  {std::numeric_limits<int64_t>::min(), -1, 0, std::numeric_limits<int64_t>::max()},
                  {2, 2})},
      {"mask", from_vector<bool>({true, false, false, true, true}, {5, 1})},
      {"scalar", scalar_tensor(3.25, kFloat64)},
      {"empty", zeros({0, 4})},
      {"bf16", from_vector<BFloat16>({BFloat16::from_bits(0x7FC1), BFloat16(-0.0f),
                                      BFloat16(3.140625f), BFloat16::from_bits(0x0001)},
                                     {2, 2})},
  };
}

TEST(SerializeSafetensors, RoundTripIsBitIdenticalForEveryDtype) {
  TempDir dir;
  NamedTensors tensors = every_dtype();
  Metadata metadata{{"config", "{\"d_model\": 32}"}, {"empty", ""}, {"unicode", "ß → λ"}};
  save_safetensors(dir / "t.safetensors", tensors, metadata);
  SafetensorsFile file = load_safetensors(dir / "t.safetensors");
  EXPECT_TRUE(bit_identical(file.tensors, tensors));
  EXPECT_EQ(file.metadata, metadata);
}

TEST(SerializeSafetensors, SavesViewsAsContiguousValues) {
  TempDir dir;
  Tensor base = arange(0, 12, 1, kFloat32).view({3, 4});
  Tensor view = base.transpose(0, 1).slice(0, 1, 4, 2);  // [2, 3], strided
  save_safetensors(dir / "v.safetensors", {{"v", view}});
  EXPECT_TRUE(
      sg::testing::tensors_equal(load_safetensors(dir / "v.safetensors").tensors[0].second, view));
}

// The exact bytes, written out by hand from the format description: what any other reader sees.
TEST(SerializeSafetensors, WritesTheDocumentedLayout) {
  TempDir dir;
  save_safetensors(dir / "a.safetensors",
                   {{"b", from_vector<float>({1.0f, 2.0f})}, {"a", full({1}, 1, kInt64)}},
                   {{"k", "v"}});
  std::string header =
      R"({"__metadata__":{"k":"v"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"I64","shape":[1],"data_offsets":[8,16]}})";
  header.append((8 - header.size() % 8) % 8, ' ');  // padded so the data is 8-byte aligned
  std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40\x01\x00\x00\x00\x00\x00\x00\x00", 16);
  EXPECT_EQ(read_bytes(dir / "a.safetensors"), make_file(header, data));
}

TEST(SerializeSafetensors, ReadsFilesFromOtherWriters) {
  TempDir dir;
  // Header order differs from data order, spaces and newlines in the JSON, no metadata.
  std::string header =
      "{ \"y\" : {\"dtype\": \"BOOL\", \"shape\": [2], \"data_offsets\": [8, 10]},\n"
      "  \"x\": {\"data_offsets\": [0, 8], \"shape\": [], \"dtype\": \"F64\"} }";
  std::string data("\x00\x00\x00\x00\x00\x00\xf0\x3f\x01\x00", 10);
  write_bytes(dir / "o.safetensors", make_file(header, data));
  SafetensorsFile file = load_safetensors(dir / "o.safetensors");
  EXPECT_TRUE(bit_identical(file.tensors, {{"x", scalar_tensor(1.0, kFloat64)},
                                           {"y", from_vector<bool>({true, false})}}));
  EXPECT_TRUE(file.metadata.empty());
}

TEST(SerializeSafetensors, RejectsBadNamesAndUndefinedTensors) {
  TempDir dir;
  std::string path = dir / "bad.safetensors";
  EXPECT_SG_ERROR(save_safetensors(path, {{"a", ones({1})}, {"a", ones({1})}}),
                  "save_safetensors: tensor name 'a' appears twice");
  EXPECT_SG_ERROR(save_safetensors(path, {{"__metadata__", ones({1})}}),
                  "save_safetensors: invalid tensor name '__metadata__'");
  EXPECT_SG_ERROR(save_safetensors(path, {{"", ones({1})}}), "invalid tensor name ''");
  EXPECT_SG_ERROR(save_safetensors(path, {{"u", Tensor()}}), "tensor 'u' is undefined");
  EXPECT_SG_ERROR(save_safetensors(path, {{"a", ones({1})}}, {{"k", "\xff"}}), "valid UTF-8");
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_SG_ERROR(save_safetensors(dir / "no/such/dir/x.safetensors", {{"a", ones({1})}}),
                  "save_safetensors: cannot write " + (dir / "no/such/dir/x.safetensors"));
}

// ---- every kind of broken file is a clear error naming the path, never a crash ----

class SerializeCorruptFile : public ::testing::Test {
 protected:
  // Writes `bytes` and expects loading to fail with `message` and the path in the error.
  void expect_rejected(const std::string& bytes, const std::string& message) {
    write_bytes(path, bytes);
    EXPECT_SG_ERROR(load_safetensors(path), message);
    EXPECT_SG_ERROR(load_safetensors(path), "load_safetensors: " + path);
  }
  // A header for one F32 tensor "w" of `shape` at `offsets`, with 8 data bytes after it.
  void expect_entry_rejected(const std::string& entry, const std::string& message) {
    expect_rejected(make_file("{\"w\": " + entry + "}", std::string(8, '\0')), message);
  }
  TempDir dir;
  std::string path = dir / "bad.safetensors";
};

TEST_F(SerializeCorruptFile, MissingFileOrDirectory) {
  EXPECT_SG_ERROR(load_safetensors(path), "load_safetensors: cannot open " + path);
  EXPECT_SG_ERROR(load_safetensors(path), "No such file or directory");
  EXPECT_SG_ERROR(load_safetensors(dir.path().string()), "not a regular file");
}

TEST_F(SerializeCorruptFile, TooShortForTheHeaderLength) {
  expect_rejected("", "is 0 bytes long, too short for the 8-byte header length");
  expect_rejected("abcde", "is 5 bytes long");
}

TEST_F(SerializeCorruptFile, HeaderLengthBeyondTheFile) {
  expect_rejected(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10),
                  "the header length 9223372036854775807 exceeds the 2 bytes after it");
  // A valid file cut short inside its header.
  save_safetensors(path, {{"w", ones({4})}});
  std::string bytes = read_bytes(path);
  expect_rejected(bytes.substr(0, 20), "exceeds the 12 bytes after it");
}

TEST_F(SerializeCorruptFile, TruncatedOrExtendedData) {
  save_safetensors(path, {{"w", ones({4})}, {"v", ones({2})}});
  std::string bytes = read_bytes(path);
  expect_rejected(bytes.substr(0, bytes.size() - 3), "outside the 21 bytes of data");
  expect_rejected(bytes.substr(0, bytes.size() - 8),
                  "tensor 'v' has data_offsets [16, 24] outside the 16 bytes of data");
  expect_rejected(bytes + "xyz", "the tensors cover 24 bytes but the data section has 27");
}

TEST_F(SerializeCorruptFile, GarbageBytes) {
  std::string garbage;
  uint64_t state = 42;
  for (int i = 0; i < 4096; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    garbage.push_back(static_cast<char>(state >> 56));
  }
  expect_rejected(garbage, "is not a valid safetensors file");
  // A plausible length followed by garbage: the JSON parser rejects it.
  expect_rejected(make_file(garbage.substr(0, 64), garbage.substr(64, 64)),
                  "the header is not valid JSON");
}

// Random damage anywhere (header or data): loading either succeeds with a well-formed file or
// throws sg::Error; never another exception, never a crash.
TEST_F(SerializeCorruptFile, RandomByteFlipsAreAlwaysCleanErrors) {
  save_safetensors(path, every_dtype(), {{"config", "d_model=8"}});
  const std::string good = read_bytes(path);
  uint64_t state = 7;
  auto next = [&] {
    return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33;
  };
  int errors = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = good;
    for (int flips = 1 + static_cast<int>(next() % 3); flips > 0; --flips) {
      bytes[next() % bytes.size()] ^= static_cast<char>(1 + next() % 255);
    }
    write_bytes(path, bytes);
    try {
      load_safetensors(path);
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(errors, 100);  // most damage to the header is caught
}

TEST_F(SerializeCorruptFile, HeaderIsNotAJsonObject) {
  expect_rejected(make_file("{\"w\": {\"dtype\": ", ""), "the header is not valid JSON");
  expect_rejected(make_file("[1, 2]", ""), "the header is not a JSON object");
  expect_rejected(make_file("{\"a\": 1, \"a\": 1}", ""), "the header names 'a' twice");
  expect_rejected(make_file(R"({"__metadata__": {"k": 3}})", ""),
                  "__metadata__ value of 'k' is 3, not a string");
  expect_rejected(make_file(R"({"__metadata__": [1]})", ""), "__metadata__ is not an object");
}

TEST_F(SerializeCorruptFile, BadTensorEntries) {
  expect_entry_rejected("7", "tensor 'w' is described by 7, not an object");
  expect_entry_rejected(R"({"dtype": "F16", "shape": [4], "data_offsets": [0, 8]})",
                        "tensor 'w' has dtype \"F16\"; supported are F32, F64, I64, BOOL and BF16");
  expect_entry_rejected(R"({"shape": [2], "data_offsets": [0, 8]})", "has no dtype string");
  expect_entry_rejected(R"({"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]})",
                        "has shape [-2]");
  expect_entry_rejected(R"({"dtype": "F32", "shape": 2, "data_offsets": [0, 8]})",
                        "has no shape array");
  expect_entry_rejected(
      R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]})",
      "too large");
  expect_entry_rejected(R"({"dtype": "F32", "shape": [2], "data_offsets": [0]})",
                        "has data_offsets [0]; expected [begin, end]");
  expect_entry_rejected(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 16]})",
                        "data_offsets [0, 16] outside the 8 bytes of data");
  expect_entry_rejected(R"({"dtype": "F32", "shape": [2], "data_offsets": [8, 0]})",
                        "data_offsets [8, 0] outside");
  expect_entry_rejected(R"({"dtype": "F64", "shape": [2], "data_offsets": [0, 8]})",
                        "has shape [2] of float64, which needs 16 bytes, but data_offsets [0, 8] "
                        "hold 8");
  // 2^61 float64s: the byte count wrapped to 0, and the message said it needed 0 bytes.
  expect_entry_rejected(
      R"({"dtype": "F64", "shape": [2305843009213693952], "data_offsets": [0, 0]})",
      "has shape [2305843009213693952] of float64, more than 2^64 bytes");
  expect_entry_rejected(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 8], "x": 1})",
                        "has unknown field x");
}

TEST_F(SerializeCorruptFile, OverlapsAndGaps) {
  std::string data(16, '\0');
  expect_rejected(make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                            data),
                  "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  expect_rejected(
      make_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", data),
      "bytes [0, 8) of the data belong to no tensor");
}

TEST_F(SerializeCorruptFile, BoolBytesOtherThanZeroOrOne) {
  expect_rejected(make_file(R"({"m": {"dtype": "BOOL", "shape": [3], "data_offsets": [0, 3]}})",
                            std::string("\x01\x00\x07", 3)),
                  "bool tensor 'm' holds byte 7 at element 2");
}

}  // namespace
}  // namespace sg::nn
