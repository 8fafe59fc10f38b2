#include "train/metadata.h"

#include "autograd/error.h"
#include "train/numbers.h"

namespace sg::train {

MetadataReader::MetadataReader(const nn::Metadata& metadata, std::string source)
    : metadata_(metadata), source_(std::move(source)) {}

void MetadataReader::expect_format(const std::string& format,
                                   const std::string& description) const {
  auto it = metadata_.find("format");
  SG_CHECK(it != metadata_.end() && it->second == format,
           "{} is not {} (its metadata has no \"format\": \"{}\")", source_, description, format);
}

const std::string& MetadataReader::text(const std::string& key) const {
  auto it = metadata_.find(key);
  SG_CHECK(it != metadata_.end(), "{}: checkpoint metadata has no '{}'", source_, key);
  return it->second;
}

int64_t MetadataReader::integer(const std::string& key) const {
  return parse_number<int64_t>(text(key), fmt::format("{}: checkpoint metadata '{}'", source_, key),
                               "a valid integer");
}

uint64_t MetadataReader::unsigned_integer(const std::string& key) const {
  return parse_number<uint64_t>(text(key),
                                fmt::format("{}: checkpoint metadata '{}'", source_, key),
                                "a valid non-negative integer");
}

double MetadataReader::real(const std::string& key) const {
  return parse_number<double>(text(key), fmt::format("{}: checkpoint metadata '{}'", source_, key),
                              "a valid number");
}

bool MetadataReader::boolean(const std::string& key) const {
  return parse_bool(text(key), fmt::format("{}: checkpoint metadata '{}'", source_, key));
}

nlohmann::json MetadataReader::json(const std::string& key, int max_depth) const {
  try {
    auto bounded = [max_depth](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > max_depth) throw std::runtime_error("nested too deep");
      return true;
    };
    return nlohmann::json::parse(text(key), bounded);
  } catch (const sg::Error&) {
    throw;
  } catch (const std::exception& e) {
    SG_FAIL("{}: checkpoint metadata '{}' is not valid JSON here: {}", source_, key, e.what());
  }
}

std::vector<std::string> MetadataReader::strings(const std::string& key) const {
  const nlohmann::json list = json(key, 1);
  SG_CHECK(list.is_array(), "{}: checkpoint metadata '{}' is not a list of strings", source_, key);
  std::vector<std::string> out;
  for (const auto& item : list) {
    SG_CHECK(item.is_string(), "{}: checkpoint metadata '{}' is not a list of strings", source_,
             key);
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> MetadataReader::with_prefix(const std::string& prefix) const {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : metadata_) {
    if (key.starts_with(prefix)) out[key.substr(prefix.size())] = value;
  }
  return out;
}

std::string strings_to_json(const std::vector<std::string>& strings, const std::string& key) {
  try {
    return nlohmann::json(strings).dump();
  } catch (const nlohmann::json::exception&) {
    for (const std::string& s : strings) {
      try {
        (void)nlohmann::json(s).dump();
      } catch (const nlohmann::json::exception&) {
        std::string shown;  // the bytes outside ASCII as \xNN, so the message itself is readable
        for (unsigned char c : s)
          shown += c < 0x80 ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
        SG_FAIL("metadata '{}': the string '{}' is not valid UTF-8", key, shown);
      }
    }
    throw;
  }
}

}  // namespace sg::train
