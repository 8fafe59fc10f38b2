#include "distributed/same_settings.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "autograd/factory.h"

namespace sg::distributed {

namespace {

// Separators that no flag's text holds: ASCII's unit and record separators.
constexpr char kUnit = '\x1f', kRecord = '\x1e';

std::string encode(const Settings& settings) {
  std::string text;
  for (const auto& [name, value] : settings) text += name + kUnit + value + kRecord;
  return text;
}

Settings decode(const std::string& text) {
  Settings settings;
  size_t start = 0;
  for (size_t end; (end = text.find(kRecord, start)) != std::string::npos; start = end + 1) {
    const std::string record = text.substr(start, end - start);
    const size_t unit = record.find(kUnit);
    settings.emplace_back(record.substr(0, unit),
                          unit == std::string::npos ? "" : record.substr(unit + 1));
  }
  return settings;
}

}  // namespace

std::vector<std::string> all_gather_strings(ProcessGroup& group, const std::string& text) {
  const int ranks = group.world_size();
  Tensor length = full({1}, static_cast<double>(text.size()), TensorOptions(kInt64));
  Tensor lengths = zeros({ranks}, kInt64);
  group.all_gather_into(lengths, length);
  const std::vector<int64_t> sizes = lengths.to_vector<int64_t>();
  const int64_t words = (*std::max_element(sizes.begin(), sizes.end()) + 7) / 8;
  Tensor mine = zeros({std::max<int64_t>(words, 1)}, kInt64);
  std::memcpy(mine.raw_data(), text.data(), text.size());
  Tensor all = zeros({mine.numel() * ranks}, kInt64);
  group.all_gather_into(all, mine);
  std::vector<std::string> texts;
  for (int q = 0; q < ranks; ++q) {
    const char* bytes = static_cast<const char*>(all.raw_data()) + q * mine.numel() * 8;
    texts.emplace_back(bytes, static_cast<size_t>(sizes[static_cast<size_t>(q)]));
  }
  return texts;
}

void check_same_settings(ProcessGroup& group, const Settings& settings,
                         const std::string& program) {
  const std::vector<std::string> texts = all_gather_strings(group, encode(settings));
  if (std::all_of(texts.begin(), texts.end(), [&](const std::string& t) { return t == texts[0]; }))
    return;
  // Each name in the order rank 0 lists it (then those rank 0 lacks), with every rank's value.
  std::vector<std::string> names;
  std::vector<std::map<std::string, std::string>> values;
  for (const std::string& text : texts) {
    values.emplace_back();
    for (const auto& [name, value] : decode(text)) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      values.back()[name] = value;
    }
  }
  std::vector<std::string> differences;
  for (const std::string& name : names) {
    std::vector<std::string> per_rank;
    std::vector<std::string> shown;
    for (size_t q = 0; q < values.size(); ++q) {
      auto it = values[q].find(name);
      shown.push_back(it == values[q].end() ? "unset" : fmt::format("'{}'", it->second));
      per_rank.push_back(fmt::format("{} on rank {}", shown.back(), q));
    }
    const bool same = std::all_of(shown.begin(), shown.end(),
                                  [&](const std::string& v) { return v == shown[0]; });
    if (!same) differences.push_back(fmt::format("{} is {}", name, fmt::join(per_rank, ", ")));
  }
  throw RanksDisagree(fmt::format(
      "{}: the ranks were started with different settings: {}; every rank must be given the same "
      "flags",
      program, fmt::join(differences, "; ")));
}

}  // namespace sg::distributed
