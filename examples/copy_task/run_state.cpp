#include "run_state.h"

#include "train/metadata.h"

namespace copy_task {

namespace {
constexpr const char* kFormat = "scratchgrad-copy-task-1";
}  // namespace

sg::nn::Metadata metadata_for(const Config& config) {
  sg::nn::Metadata md = sg::train::config_metadata(config.to_map());
  md["format"] = kFormat;
  return md;
}

Config config_of(const sg::train::Checkpoint& checkpoint) {
  const sg::train::MetadataReader md(checkpoint.metadata, checkpoint.path);
  md.expect_format(kFormat, "a copy_task checkpoint");
  Config config = Config::parse_map(md.with_prefix("config."));
  config.check_settings();
  sg::train::check_fits(checkpoint, config.model_options());
  config.check_bounds();
  return config;
}

CheckpointFile read_checkpoint(const std::string& path) {
  sg::train::Checkpoint checkpoint = sg::train::read_checkpoint(path);
  Config config = config_of(checkpoint);
  return {std::move(config), std::move(checkpoint)};
}

}  // namespace copy_task
