#include "run_state.h"

#include <memory>

#include "train/metadata.h"

namespace g2p {

using sg::data::Vocabulary;

namespace {

constexpr const char* kFormat = "scratchgrad-g2p-1";

}  // namespace

sg::nn::Metadata metadata_for(const Model& m, const DataState& data) {
  sg::nn::Metadata md = sg::train::config_metadata(m.config.to_map());
  md["format"] = kFormat;
  md["letters"] = sg::train::strings_to_json(m.letters.symbols(), "letters");
  md["phonemes"] = sg::train::strings_to_json(m.phonemes.symbols(), "phonemes");
  md["loader_epoch"] = std::to_string(data.loader.epoch);
  md["loader_batch"] = std::to_string(data.loader.batch);
  md["train_pairs"] = std::to_string(data.train_pairs);
  return md;
}

DataState data_state_of(const sg::train::Checkpoint& checkpoint) {
  const sg::train::MetadataReader md(checkpoint.metadata, checkpoint.path);
  DataState data;
  data.loader.epoch = md.integer("loader_epoch");
  data.loader.batch = md.integer("loader_batch");
  data.train_pairs = md.integer("train_pairs");
  return data;
}

CheckpointFile read_checkpoint(sg::train::Checkpoint checkpoint) {
  const sg::train::MetadataReader md(checkpoint.metadata, checkpoint.path);
  md.expect_format(kFormat, "a g2p checkpoint");
  CheckpointFile c;
  c.model.config = Config::from_map(md.with_prefix("config."));
  c.model.letters = Vocabulary::from_symbols(md.strings("letters"));
  c.model.phonemes = Vocabulary::from_symbols(md.strings("phonemes"));
  c.step = md.integer("step");
  SG_CHECK(c.step >= 0, "{}: checkpoint metadata 'step' is {}", checkpoint.path, c.step);
  // The sizes the config and vocabularies claim, against the values the file holds, before a
  // model of that size is built.
  const sg::nn::TransformerOptions options =
      c.model.config.model_options(c.model.letters.size(), c.model.phonemes.size());
  c.model.transformer = sg::train::load_model<sg::nn::Transformer>(checkpoint, options);
  c.checkpoint = std::move(checkpoint);
  return c;
}

CheckpointFile read_checkpoint(const std::string& path) {
  return read_checkpoint(sg::train::read_checkpoint(path));
}

sg::nn::Metadata save_average(const sg::train::AverageRequest& request) {
  std::vector<std::string> same_model = {"format", "letters", "phonemes"};
  for (const sg::train::ConfigField& f : Config::fields()) {
    if (f.on_resume == sg::train::OnResume::kFixedModel) same_model.push_back("config." + f.key);
  }
  return sg::train::save_average(request, same_model,
                                 [](const sg::train::Checkpoint& file) { read_checkpoint(file); });
}

}  // namespace g2p
