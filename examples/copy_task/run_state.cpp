#include "run_state.h"

#include "train/metadata.h"
#include "train/mixed_precision.h"
#include "train/numbers.h"

namespace copy_task {

namespace {

constexpr const char* kFormat = "scratchgrad-copy-task-1";

// The run's state from a checkpoint's metadata, strictly: every value parses in full, or the
// error names the file and the key.
RunState state_from_metadata(const sg::train::MetadataReader& md) {
  RunState s;
  s.step = md.integer("step");
  s.data_rng = md.unsigned_integer("data_rng");
  s.eval_rng = md.unsigned_integer("eval_rng");
  s.dropout = sg::train::read_dropout_streams(md);
  s.best_exact = md.real("best_exact");
  s.best_step = md.integer("best_step");
  if (!md.text("first_perfect").empty()) s.first_perfect = md.integer("first_perfect");
  s.history = sg::train::History::from_json(md.text("history"), md.source());
  SG_CHECK(s.step >= 0 && s.history.losses.size() == static_cast<size_t>(s.step),
           "{}: checkpoint metadata 'history' holds {} losses for step {}", md.source(),
           s.history.losses.size(), s.step);
  return s;
}

// A checkpoint's config: its metadata parsed strictly, and its sizes compared with the values
// the file holds (layers=1000000000 is refused there, before any model is built), then bounded.
Config config_of(const sg::train::Checkpoint& checkpoint, const sg::train::MetadataReader& md) {
  md.expect_format(kFormat, "a copy_task checkpoint");
  Config config = Config::parse_map(md.with_prefix("config."));
  config.check_settings();
  sg::train::check_fits(checkpoint, config.model_options());
  config.check_bounds();
  return config;
}

}  // namespace

sg::nn::Metadata metadata_for(const Config& config, const RunState& state) {
  sg::nn::Metadata md = sg::train::config_metadata(config.to_map());
  md["format"] = kFormat;
  md["step"] = std::to_string(state.step);
  md["data_rng"] = std::to_string(state.data_rng);
  md["eval_rng"] = std::to_string(state.eval_rng);
  sg::train::write_dropout_streams(md, state.dropout);
  md["best_exact"] = fmt::format("{}", state.best_exact);
  md["best_step"] = std::to_string(state.best_step);
  md["first_perfect"] = state.first_perfect ? std::to_string(*state.first_perfect) : "";
  md["history"] = state.history.to_json();
  md["precision"] = sg::train::precision_name(state.bf16);
  return md;
}

CheckpointFile read_checkpoint(const std::string& path) {
  sg::train::Checkpoint checkpoint = sg::train::read_checkpoint(path);
  const Config config = config_of(checkpoint, sg::train::MetadataReader(checkpoint.metadata, path));
  return {config, std::move(checkpoint)};
}

RunState resume_from(const sg::train::RunDirectory& run, const Config& config, bool bf16,
                     sg::nn::Transformer& model, sg::optim::Optimizer& optimizer) {
  sg::train::Checkpoint last = run.read_last();
  sg::train::check_same_precision(last.metadata, bf16, last.path);
  const sg::train::MetadataReader md(last.metadata, last.path);
  const Config saved = config_of(last, md);
  sg::train::check_resume(saved.to_map(), config.to_map(), Config::fields(), last.path);
  RunState state = state_from_metadata(md);
  state.bf16 = bf16;
  sg::train::restore(last, model, &optimizer);
  return state;
}

}  // namespace copy_task
