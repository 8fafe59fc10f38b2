#include "run_state.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>

namespace copy_task {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

Config config_from_metadata(const sg::nn::Metadata& md, const std::string& path) {
  auto format = md.find("format");
  SG_CHECK(format != md.end() && format->second == "scratchgrad-copy-task-1",
           "{} is not a copy_task checkpoint (no copy-task metadata)", path);
  std::map<std::string, std::string> values;
  for (const auto& [k, v] : md) {
    if (k.rfind("config.", 0) == 0) values[k.substr(7)] = v;
  }
  return Config::from_map(values);
}

// The run's state from a checkpoint's metadata, strictly: every value parses in full, or the
// error names the file and the key.
RunState state_from_metadata(const sg::nn::Metadata& md, const std::string& path) {
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = md.find(key);
    SG_CHECK(it != md.end(), "{}: checkpoint metadata has no '{}'", path, key);
    return it->second;
  };
  auto parse = [&](const std::string& key, auto& value) {
    const std::string& s = get(key);
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    SG_CHECK(!s.empty() && ec == std::errc() && end == s.data() + s.size(),
             "{}: checkpoint metadata '{}' = '{}' is not a valid value", path, key,
             s.substr(0, 80));
  };
  RunState s;
  parse("step", s.step), parse("data_rng", s.data_rng), parse("eval_rng", s.eval_rng);
  parse("global_rng", s.global_rng), parse("best_exact", s.best_exact);
  parse("best_step", s.best_step);
  if (!get("first_perfect").empty()) parse("first_perfect", s.first_perfect.emplace());
  try {
    // History is flat (an object of number arrays): anything nested deeper is refused while
    // parsing, before it could be printed or freed recursively.
    auto shallow = [](int depth, Json::parse_event_t, Json&) {
      if (depth > 3) throw std::runtime_error("nested too deep");
      return true;
    };
    s.history = History::from_json(Json::parse(get("history"), shallow));
  } catch (const std::exception& e) {
    SG_FAIL("{}: checkpoint metadata 'history' is not valid: {}", path, e.what());
  }
  SG_CHECK(s.step >= 0 && s.history.losses.size() == static_cast<size_t>(s.step),
           "{}: checkpoint metadata 'history' holds {} losses for step {}", path,
           s.history.losses.size(), s.step);
  return s;
}

// Temporary files ("<name>.tmp-<pid>") of writers that were killed: their process is gone.
void remove_stale_temporaries(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp-");
    if (at == std::string::npos || !entry.is_regular_file()) continue;
    pid_t pid = 0;
    const char *first = name.data() + at + 5, *last = name.data() + name.size();
    auto [end, ec] = std::from_chars(first, last, pid);
    if (ec != std::errc() || end != last || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its writer may still be running
    std::error_code ignored;
    fs::remove(entry.path(), ignored);
  }
}

}  // namespace

sg::nn::Metadata metadata_for(const Config& config, const RunState& state) {
  sg::nn::Metadata md;
  for (const auto& [k, v] : config.to_map()) md["config." + k] = v;
  md["format"] = "scratchgrad-copy-task-1";
  md["step"] = std::to_string(state.step);
  md["data_rng"] = std::to_string(state.data_rng);
  md["eval_rng"] = std::to_string(state.eval_rng);
  md["global_rng"] = std::to_string(state.global_rng);
  md["best_exact"] = fmt::format("{}", state.best_exact);
  md["best_step"] = std::to_string(state.best_step);
  md["first_perfect"] = state.first_perfect ? std::to_string(*state.first_perfect) : "";
  md["history"] = state.history.to_json().dump();
  return md;
}

std::optional<std::string> first_non_finite(const sg::nn::NamedTensors& tensors) {
  sg::NoGradGuard no_grad;
  for (const auto& [name, t] : tensors) {
    if (!sg::is_floating(t.dtype()) || t.numel() == 0) continue;
    // x * 0 is 0 for every finite x and NaN for an infinity or a NaN: one value to read back.
    if (!std::isfinite((t * 0.0).sum().item<double>())) return name;
  }
  return std::nullopt;
}

CheckpointFile read_checkpoint(const std::string& path) {
  SG_CHECK(fs::exists(path), "checkpoint {} does not exist", path);
  sg::nn::SafetensorsFile file = sg::nn::load_safetensors(path);
  CheckpointFile c{config_from_metadata(file.metadata, path), {}, {}, std::move(file.metadata)};
  int64_t values = 0;
  const std::string prefix = kOptimizerPrefix;
  for (auto& [name, t] : file.tensors) {
    if (name.rfind(prefix, 0) == 0) {
      c.optimizer.emplace_back(name.substr(prefix.size()), t);
    } else {
      values += t.numel();
      c.model.emplace_back(name, t);
    }
  }
  // A config that does not fit the tensors (layers=1000000000) is refused before the model is
  // built; the exact check, name by name, comes when the tensors are copied in.
  SG_CHECK(c.config.min_state_values() <= values,
           "checkpoint {}: its config ({}) describes a model of at least {} values, but the file "
           "holds {}",
           path, c.config.model_options().to_string(), c.config.min_state_values(), values);
  if (auto bad = first_non_finite(c.model)) {
    SG_FAIL("checkpoint {}: tensor '{}' holds infinities or NaNs (saved from a diverged run?)",
            path, *bad);
  }
  return c;
}

void prepare_out_dir(const TrainOptions& options, const RunFiles& files) {
  fs::create_directories(options.out_dir);
  remove_stale_temporaries(options.out_dir);
  if (options.resume) return;
  for (const std::string& path : {files.last, files.best, files.legacy_optim}) {
    if (!fs::exists(path)) continue;
    SG_CHECK(options.overwrite,
             "{} already holds a run ({}): pass --resume to continue it or --overwrite to start "
             "over",
             options.out_dir, path);
    fs::remove(path);
  }
}

RunState resume_from(const RunFiles& files, const Config& config, sg::nn::Transformer& model,
                     sg::optim::Optimizer& optimizer) {
  SG_CHECK(fs::exists(files.last), "--resume: no checkpoint at {}", files.last);
  CheckpointFile last = read_checkpoint(files.last);
  SG_CHECK(last.config.model_options().to_string() == config.model_options().to_string(),
           "--resume: the checkpoint's model ({}) differs from the requested one ({})",
           last.config.model_options().to_string(), config.model_options().to_string());
  RunState state = state_from_metadata(last.metadata, files.last);
  std::string optim_source = files.last;
  if (last.optimizer.empty()) {
    SG_CHECK(fs::exists(files.legacy_optim), "--resume: {} holds no optimizer state", files.last);
    sg::nn::SafetensorsFile optim = sg::nn::load_safetensors(files.legacy_optim);
    auto step = optim.metadata.find("step");
    SG_CHECK(step != optim.metadata.end() && step->second == last.metadata.at("step"),
             "--resume: {} (step {}) and {} (step {}) were not written together (a run stopped "
             "between the two); refusing to resume from a mismatched pair",
             files.last, state.step, files.legacy_optim,
             step == optim.metadata.end() ? "unknown" : step->second.substr(0, 20));
    last.optimizer = std::move(optim.tensors);
    optim_source = files.legacy_optim;
  }
  sg::nn::load(model, last.model, files.last);
  try {
    optimizer.load_state(last.optimizer);
  } catch (const sg::Error& e) {
    SG_FAIL("--resume: the optimizer state in {} does not match: {}", optim_source, e.what());
  }
  return state;
}

}  // namespace copy_task
