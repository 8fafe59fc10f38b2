// A run's configuration as text, as checkpoints keep it ("config.<key>" metadata), with the
// command-line flag of each key and whether it may change when a run is resumed. Resuming with a
// different model, task or recipe would continue training something other than what was saved:
// check_resume refuses it, naming the flag and both values. Flags that only say how long to train
// or how often to evaluate and save may change.
//
//   const std::vector<sg::train::ConfigField> fields = {
//       {"d_model", "--d-model", sg::train::OnResume::kFixedModel},
//       {"steps", "--steps", sg::train::OnResume::kMayChange}};
//   sg::train::check_resume(saved.to_map(), config.to_map(), fields, path);
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sg::train {

using ConfigMap = std::map<std::string, std::string>;

enum class OnResume {
  kFixedModel,  // the model's shape or kind: fixed ("the checkpoint's model differs")
  kFixed,       // the data or the recipe: fixed
  kMayChange,   // how long, how often: may change (e.g. --steps, to train longer)
};

struct ConfigField {
  std::string key;   // "d_ff", as in to_map()
  std::string flag;  // "--ffn"
  OnResume on_resume = OnResume::kFixed;
};

// The config prefixed for checkpoint metadata: {"config.d_ff": "64", ...}.
std::map<std::string, std::string> config_metadata(const ConfigMap& config);

// Refuses to resume the run saved in `path` (whose config is `saved`) with `requested`: the first
// field that differs and may not change is named with its flag and both values, model fields
// first. Keys the saved config lacks (written before the key existed) are not compared.
void check_resume(const ConfigMap& saved, const ConfigMap& requested,
                  const std::vector<ConfigField>& fields, const std::string& path);

// "--steps, --eval-every, ...": the flags of the fields that may change on --resume.
std::string flags_that_may_change(const std::vector<ConfigField>& fields);

}  // namespace sg::train
