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

sg::data::LoaderPosition resume_position(const sg::train::Checkpoint& last, const Model& model,
                                         int64_t train_pairs) {
  const CheckpointFile saved = read_checkpoint(last);
  const Config& config = model.config;
  sg::train::check_resume(saved.model.config.to_map(), config.to_map(), Config::fields(),
                          last.path);
  const sg::train::MetadataReader md(last.metadata, last.path);
  const int64_t saved_pairs = md.integer("train_pairs");
  SG_CHECK(saved_pairs == train_pairs,
           "--resume: the run was trained on {} pronunciations, {} with --train-words {} has {} "
           "(another dictionary or --train-words?)",
           saved_pairs, config.data, config.train_words, train_pairs);
  SG_CHECK(saved.model.letters.symbols() == model.letters.symbols() &&
               saved.model.phonemes.symbols() == model.phonemes.symbols(),
           "--resume: {} has other vocabularies than {} gives (another dictionary?)", last.path,
           config.data);
  return {.epoch = md.integer("loader_epoch"), .batch = md.integer("loader_batch")};
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
