// What the copy-task tests share: a fresh directory per run, a quick run's config and options, and
// a checkpoint copy with some metadata changed.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "config.h"
#include "nn/nn.h"
#include "trainer.h"

namespace copy_task::testing {

inline std::string temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / fmt::format("sg_copy_task_{}_{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// A quick run (a few steps of the tiny model) in a fresh directory.
inline Config quick_config() {
  Config c = Config::preset_named("tiny");
  c.batch = 8, c.loop.steps = 4, c.loop.eval_every = 2, c.eval_samples = 4, c.final_samples = 4;
  c.loop.checkpoint_every = 2;
  return c;
}

inline TrainOptions quick_options(const std::string& name) {
  TrainOptions o;
  o.quiet = true;
  o.out_dir = temp_dir(name);
  return o;
}

// A copy of checkpoint `from` at `to` with some metadata changed (tensors as they were).
inline void rewrite_metadata(const std::string& from, const std::string& to,
                             const std::map<std::string, std::string>& changes) {
  sg::nn::SafetensorsFile file = sg::nn::load_safetensors(from);
  for (const auto& [k, v] : changes) file.metadata[k] = v;
  sg::nn::save_safetensors(to, file.tensors, file.metadata);
}

}  // namespace copy_task::testing
