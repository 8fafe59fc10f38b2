#include "run_state.h"

#include <filesystem>
#include <map>
#include <memory>

namespace g2p {

namespace fs = std::filesystem;
using sg::data::Vocabulary;
using Json = nlohmann::json;

namespace {

constexpr const char* kFormat = "scratchgrad-g2p-1";

std::vector<std::string> symbols_from(const sg::nn::Metadata& md, const std::string& key,
                                      const std::string& path) {
  auto it = md.find(key);
  SG_CHECK(it != md.end(), "{}: checkpoint metadata has no '{}'", path, key);
  try {
    return Json::parse(it->second).get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    SG_FAIL("{}: checkpoint metadata '{}' is not a list of symbols: {}", path, key, e.what());
  }
}

}  // namespace

sg::nn::Metadata metadata_for(const Model& m, const RunState& s) {
  sg::nn::Metadata md;
  for (const auto& [k, v] : m.config.to_map()) md["config." + k] = v;
  md["format"] = kFormat;
  md["letters"] = Json(m.letters.symbols()).dump();
  md["phonemes"] = Json(m.phonemes.symbols()).dump();
  md["step"] = std::to_string(s.step);
  md["loader_epoch"] = std::to_string(s.loader.epoch);
  md["loader_batch"] = std::to_string(s.loader.batch);
  md["global_rng"] = std::to_string(s.global_rng);
  md["best_wer"] = fmt::format("{}", s.best_wer);
  md["best_per"] = fmt::format("{}", s.best_per);
  md["best_step"] = std::to_string(s.best_step);
  md["train_pairs"] = std::to_string(s.train_pairs);
  md["history"] = s.history.to_json().dump();
  return md;
}

CheckpointFile read_checkpoint(const std::string& path) {
  SG_CHECK(fs::exists(path), "g2p: checkpoint {} does not exist", path);
  sg::nn::SafetensorsFile file = sg::nn::load_safetensors(path);
  const auto& md = file.metadata;
  auto format = md.find("format");
  SG_CHECK(format != md.end() && format->second == kFormat,
           "{} is not a g2p checkpoint (no '{}' metadata)", path, kFormat);
  std::map<std::string, std::string> values;
  for (const auto& [k, v] : md)
    if (k.starts_with("config.")) values[k.substr(7)] = v;
  CheckpointFile c;
  c.model.config = Config::from_map(values);
  c.model.letters = Vocabulary::from_symbols(symbols_from(md, "letters", path));
  c.model.phonemes = Vocabulary::from_symbols(symbols_from(md, "phonemes", path));
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = md.find(key);
    SG_CHECK(it != md.end(), "{}: checkpoint metadata has no '{}'", path, key);
    return it->second;
  };
  RunState& s = c.state;
  s.step = parse_number<int64_t>(get("step"), "step");
  s.loader.epoch = parse_number<int64_t>(get("loader_epoch"), "loader_epoch");
  s.loader.batch = parse_number<int64_t>(get("loader_batch"), "loader_batch");
  s.global_rng = parse_number<uint64_t>(get("global_rng"), "global_rng");
  s.best_wer = parse_number<double>(get("best_wer"), "best_wer");
  s.best_per = parse_number<double>(get("best_per"), "best_per");
  s.best_step = parse_number<int64_t>(get("best_step"), "best_step");
  s.train_pairs = parse_number<int64_t>(get("train_pairs"), "train_pairs");
  try {
    s.history = History::from_json(Json::parse(get("history")));
  } catch (const std::exception& e) {
    SG_FAIL("{}: checkpoint metadata 'history' is not valid: {}", path, e.what());
  }
  SG_CHECK(s.step >= 0 && s.history.losses.size() == static_cast<size_t>(s.step),
           "{}: checkpoint history holds {} losses for step {}", path, s.history.losses.size(),
           s.step);
  c.model.transformer = std::make_shared<sg::nn::Transformer>(
      c.model.config.model_options(c.model.letters.size(), c.model.phonemes.size()));
  sg::nn::NamedTensors weights;
  const std::string prefix = kOptimizerPrefix;
  for (auto& [name, t] : file.tensors) {
    if (name.starts_with(prefix))
      c.optimizer.emplace_back(name.substr(prefix.size()), t);
    else
      weights.emplace_back(name, t);
  }
  sg::nn::load(*c.model.transformer, weights, path);
  return c;
}

}  // namespace g2p
