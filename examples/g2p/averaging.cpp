#include "averaging.h"

#include "nn/serialize.h"
#include "nn/train/average_checkpoints.h"
#include "nn/train/metadata.h"
#include "nn/train/run_directory.h"

namespace g2p {

std::string describe_weights(const sg::nn::Metadata& metadata) {
  auto get = [&](const std::string& key) {
    auto it = metadata.find(key);
    return it == metadata.end() ? std::string() : it->second;
  };
  const std::string weights = get("weights"), step = get("step");
  if (weights == "ema")
    return fmt::format("the moving average of the weights (decay {}), step {}", get("config.ema"),
                       step);
  if (weights == "average")
    return fmt::format("the mean of the weights at steps {}", get("averaged_steps"));
  return fmt::format("the trained weights, step {}", step);
}

AveragedModel average_models(const std::vector<std::string>& paths) {
  SG_CHECK(!paths.empty(), "g2p average: no checkpoints given");
  AveragedModel out;
  std::string first_path;
  for (const std::string& path : paths) {
    CheckpointFile c = read_checkpoint(path);
    out.steps.push_back(c.step);
    if (first_path.empty()) {
      first_path = path;
      out.model = c.model;
    } else {
      SG_CHECK(c.model.letters.symbols() == out.model.letters.symbols() &&
                   c.model.phonemes.symbols() == out.model.phonemes.symbols(),
               "g2p average: {} has other vocabularies than {} (another dictionary?)", path,
               first_path);
      const auto mine = c.model.config.to_map(), first = out.model.config.to_map();
      for (const sg::train::ConfigField& f : Config::fields()) {
        SG_CHECK(
            f.on_resume != sg::train::OnResume::kFixedModel || mine.at(f.key) == first.at(f.key),
            "g2p average: {} is {} in {} but {} in {}: only checkpoints of one model can be "
            "averaged",
            f.flag, mine.at(f.key), path, first.at(f.key), first_path);
      }
    }
    out.metadata = c.checkpoint.metadata;  // the last file's
    out.model.config = c.model.config;
  }
  sg::nn::load(*out.model.transformer, sg::train::average_checkpoints(paths),
               fmt::format("the mean of {} checkpoints", paths.size()));
  out.model.transformer->eval();
  out.metadata["weights"] = "average";
  out.metadata["averaged_steps"] = fmt::format("[{}]", fmt::join(out.steps, ", "));
  return out;
}

std::vector<std::string> newest_step_checkpoints(const std::string& dir, int64_t count) {
  const auto steps = sg::train::RunDirectory(dir).step_checkpoints();
  std::vector<std::string> out;
  const size_t first =
      steps.size() > static_cast<size_t>(count) ? steps.size() - static_cast<size_t>(count) : 0;
  for (size_t i = first; i < steps.size(); ++i) out.push_back(steps[i].second);
  return out;
}

}  // namespace g2p
