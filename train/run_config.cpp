#include "train/run_config.h"

#include "autograd/error.h"

namespace sg::train {

std::map<std::string, std::string> config_metadata(const ConfigMap& config) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : config) out["config." + key] = value;
  return out;
}

std::string flags_that_may_change(const std::vector<ConfigField>& fields) {
  std::string out;
  for (const ConfigField& f : fields) {
    if (f.on_resume == OnResume::kMayChange) out += (out.empty() ? "" : ", ") + f.flag;
  }
  return out;
}

void check_resume(const ConfigMap& saved, const ConfigMap& requested,
                  const std::vector<ConfigField>& fields, const std::string& path) {
  for (OnResume kind : {OnResume::kFixedModel, OnResume::kFixed}) {
    for (const ConfigField& f : fields) {
      if (f.on_resume != kind) continue;
      auto was = saved.find(f.key), now = requested.find(f.key);
      SG_CHECK(now != requested.end(), "check_resume: the requested config has no '{}'", f.key);
      if (was == saved.end() || was->second == now->second) continue;
      SG_FAIL(
          "--resume: the checkpoint's {} differs from the requested one: {} is {} in {}, {} now "
          "(a resumed run keeps its configuration; only {} may change; to train another "
          "configuration, use another --out or --overwrite)",
          kind == OnResume::kFixedModel ? "model" : "configuration", f.flag, was->second, path,
          now->second, flags_that_may_change(fields));
    }
  }
}

}  // namespace sg::train
