#include "nn/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "nn/atomic_file.h"

namespace sg::nn {

// Tensor bytes are written exactly as they sit in memory; the format is little-endian, and so is
// every platform scratchgrad runs on (x86-64, AArch64, CUDA hosts).
static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian data; byte swapping is not implemented");

namespace {

constexpr const char* kMetadataKey = "__metadata__";
// The reference (Rust) reader refuses headers over 100 MB; a garbage length fails here before
// anything is allocated for it.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// A valid header nests three deep (header, tensor entry, shape). Deeper nesting is refused while
// parsing: a value nested 100,000 deep would overflow the stack when printed or compared.
constexpr int kMaxJsonDepth = 16;
// More dimensions than any real tensor has; also keeps the shape in an error message short.
constexpr size_t kMaxDims = 64;
// Error messages quote at most this much of an offending value or name.
constexpr size_t kMaxQuoted = 80;

struct DTypeCode {
  DType dtype;
  const char* code;
};
constexpr DTypeCode kDTypeCodes[] = {
    {kFloat32, "F32"}, {kFloat64, "F64"}, {kInt64, "I64"}, {kBool, "BOOL"}, {kBFloat16, "BF16"}};

const char* code_of(DType dtype) {
  for (const auto& [d, code] : kDTypeCodes) {
    if (d == dtype) return code;
  }
  SG_FAIL("save_safetensors: no safetensors code for dtype {}", dtype);
}

std::optional<DType> dtype_of_code(const std::string& code) {
  for (const auto& [d, c] : kDTypeCodes) {
    if (code == c) return d;
  }
  return std::nullopt;
}

// ---- writing ----

std::string make_header(const NamedTensors& tensors, const Metadata& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    uint64_t nbytes = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    header[name] = {{"dtype", code_of(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    SG_FAIL("save_safetensors: tensor names and metadata must be valid UTF-8 ({})", e.what());
  }
  // Pad with spaces (valid JSON whitespace) so the data starts 8-byte aligned, as the reference
  // writer does: readers can then map the file and use the data in place.
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

// ---- reading ----

// A piece of the header for an error message: bounded, so a 100 MB value makes a short message
// (sg::excerpt, which also escapes control bytes).
std::string excerpt_json(const nlohmann::json& value) {
  // Printing replaces invalid UTF-8 instead of throwing; the depth is bounded by the parser.
  return excerpt(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

[[noreturn]] void fail_invalid(const std::string& path, const std::string& why) {
  SG_FAIL("load_safetensors: {} is not a valid safetensors file: {}", path, why);
}

std::string read_whole_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever, before the check
  // below could refuse it. Reads from a regular file ignore the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  SG_CHECK(fd >= 0, "load_safetensors: cannot open {}: {}", path, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    SG_FAIL("load_safetensors: cannot read {}: not a regular file", path);
  }
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(info.st_size));
  } catch (const std::bad_alloc&) {
    ::close(fd);
    SG_FAIL("load_safetensors: cannot read {}: out of memory for its {} bytes", path, info.st_size);
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = n < 0 ? errno : EIO;
      ::close(fd);
      SG_FAIL("load_safetensors: cannot read {}: {}", path, std::strerror(error));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return bytes;
}

// One tensor's header entry, checked on its own; data_offsets are relative to the data section.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& value,
                  uint64_t data_size) {
  auto bad = [&](const std::string& why) {
    fail_invalid(path, "tensor '" + excerpt(name) + "' " + why);
  };
  if (!value.is_object()) bad("is described by " + excerpt_json(value) + ", not an object");
  for (const auto& [key, _] : value.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      bad("has unknown field " + excerpt(key));
    }
  }
  if (!value.contains("dtype") || !value["dtype"].is_string()) bad("has no dtype string");
  std::optional<DType> dtype = dtype_of_code(value["dtype"].get<std::string>());
  if (!dtype) {
    bad("has dtype " + excerpt_json(value["dtype"]) +
        "; supported are F32, F64, I64, BOOL and BF16");
  }

  if (!value.contains("shape") || !value["shape"].is_array()) bad("has no shape array");
  if (value["shape"].size() > kMaxDims) {
    bad(fmt::format("has a shape of {} dimensions; at most {} are supported", value["shape"].size(),
                    kMaxDims));
  }
  Shape shape;
  uint64_t numel = 1;
  for (const auto& d : value["shape"]) {
    if (!d.is_number_unsigned()) bad("has shape " + excerpt_json(value["shape"]));
    uint64_t size = d.get<uint64_t>();
    // Sizes must fit int64 and their product must not overflow.
    if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (size != 0 && numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / size)) {
      bad("has shape " + excerpt_json(value["shape"]) + ", too large");
    }
    numel *= size;
    shape.push_back(static_cast<int64_t>(size));
  }

  const nlohmann::json offsets = value.value("data_offsets", nlohmann::json());
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    bad("has data_offsets " + excerpt_json(offsets) + "; expected [begin, end]");
  }
  uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
  if (begin > end || end > data_size) {
    bad(fmt::format("has data_offsets [{}, {}] outside the {} bytes of data", begin, end,
                    data_size));
  }
  uint64_t itemsize = dtype_size(*dtype);
  if (numel > std::numeric_limits<uint64_t>::max() / itemsize) {  // the byte count would wrap
    bad(fmt::format("has shape {} of {}, more than 2^64 bytes", shape, dtype_name(*dtype)));
  }
  if (end - begin != numel * itemsize) {
    bad(fmt::format("has shape {} of {}, which needs {} bytes, but data_offsets [{}, {}] hold {}",
                    shape, dtype_name(*dtype), numel * itemsize, begin, end, end - begin));
  }
  return Entry{name, *dtype, std::move(shape), begin, end};
}

Metadata parse_metadata(const std::string& path, const nlohmann::json& value) {
  if (!value.is_object()) fail_invalid(path, "__metadata__ is not an object");
  Metadata metadata;
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string()) {
      fail_invalid(path, "__metadata__ value of '" + excerpt(key) + "' is " + excerpt_json(v) +
                             ", not a string");
    }
    metadata[key] = v.get<std::string>();
  }
  return metadata;
}

// The tensors must tile the data section exactly: sorted by offset, each starts where the previous
// one ends, and the last ends at the end of the file (no overlaps, no gaps, no trailing bytes).
void check_tiling(const std::string& path, std::vector<Entry>& entries, uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered) {
      fail_invalid(path, fmt::format("tensors '{}' [{}, {}) and '{}' [{}, {}) overlap",
                                     excerpt(previous->name), previous->begin, previous->end,
                                     excerpt(e.name), e.begin, e.end));
    }
    if (e.begin > covered) {
      fail_invalid(path,
                   fmt::format("bytes [{}, {}) of the data belong to no tensor", covered, e.begin));
    }
    covered = e.end;
    previous = &e;
  }
  if (covered != data_size) {
    fail_invalid(path, fmt::format("the tensors cover {} bytes but the data section has {} "
                                   "(trailing bytes, or a header describing another file)",
                                   covered, data_size));
  }
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
  // Everything is checked and moved to contiguous CPU memory before the first byte is written.
  NamedTensors cpu;
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    SG_CHECK(!name.empty() && name != kMetadataKey,
             "save_safetensors: invalid tensor name '{}' for {}", name, path);
    SG_CHECK(names.insert(name).second, "save_safetensors: tensor name '{}' appears twice ({})",
             name, path);
    SG_CHECK(t.defined(), "save_safetensors: tensor '{}' is undefined ({})", name, path);
    cpu.emplace_back(name, t.detach().to(kCPU).contiguous());
  }
  std::string header = make_header(cpu, metadata);

  AtomicFile file(path, "save_safetensors");
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header.size() >> (8 * i));
  file.write(length, sizeof length);
  file.write(header.data(), header.size());
  for (const auto& [_, t] : cpu) {
    file.write(t.raw_data(), static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  }
  file.commit();
}

SafetensorsFile load_safetensors(const std::string& path) {
  const std::string bytes = read_whole_file(path);
  if (bytes.size() < 8) {
    fail_invalid(path, fmt::format("it is {} bytes long, too short for the 8-byte header length",
                                   bytes.size()));
  }
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) {
    header_size |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  if (header_size > kMaxHeaderBytes || header_size > bytes.size() - 8) {
    fail_invalid(path, fmt::format("the header length {} exceeds the {} bytes after it "
                                   "(truncated or not a safetensors file)",
                                   header_size, bytes.size() - 8));
  }
  const uint64_t data_start = 8 + header_size, data_size = bytes.size() - data_start;

  // Parse the JSON, noting duplicate top-level names (the parser would silently keep one) and
  // stopping at the first value nested too deep.
  std::set<std::string> seen;
  std::string duplicate;
  struct TooDeep {};
  auto check_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& v) {
    using Event = nlohmann::json::parse_event_t;
    if ((event == Event::object_start || event == Event::array_start) && depth >= kMaxJsonDepth) {
      throw TooDeep{};
    }
    if (depth == 1 && event == Event::key && !seen.insert(v.get<std::string>()).second) {
      duplicate = v.get<std::string>();
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8,
                                   bytes.begin() + static_cast<ptrdiff_t>(data_start), check_event);
  } catch (const nlohmann::json::exception& e) {
    // The parser's message says where and why, then quotes what it read (possibly megabytes).
    fail_invalid(
        path, fmt::format("the header is not valid JSON ({})", excerpt(e.what(), 4 * kMaxQuoted)));
  } catch (const TooDeep&) {
    fail_invalid(path,
                 fmt::format("the header nests JSON values more than {} deep", kMaxJsonDepth));
  }
  if (!header.is_object()) fail_invalid(path, "the header is not a JSON object");
  if (!duplicate.empty()) fail_invalid(path, "the header names '" + excerpt(duplicate) + "' twice");

  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      file.metadata = parse_metadata(path, value);
    } else {
      entries.push_back(parse_entry(path, name, value, data_size));
    }
  }
  check_tiling(path, entries, data_size);

  for (const Entry& e : entries) {
    const char* src = bytes.data() + data_start + e.begin;
    size_t nbytes = e.end - e.begin;
    if (e.dtype == kBool) {
      // Any byte other than 0 or 1 would be undefined behaviour once read as a C++ bool.
      const char* bad = std::find_if(src, src + nbytes, [](char c) { return c != 0 && c != 1; });
      if (bad != src + nbytes) {
        fail_invalid(path,
                     fmt::format("bool tensor '{}' holds byte {} at element {}", excerpt(e.name),
                                 static_cast<int>(static_cast<unsigned char>(*bad)), bad - src));
      }
    }
    Tensor t = empty(e.shape, e.dtype);
    if (nbytes > 0) std::memcpy(t.raw_data(), src, nbytes);
    file.tensors.emplace_back(e.name, t);
  }
  return file;
}

}  // namespace sg::nn
