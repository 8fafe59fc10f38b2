#include "run_state.h"

#include <memory>

#include "nn/train/metadata.h"

namespace g2p {

using sg::data::Vocabulary;

namespace {

constexpr const char* kFormat = "scratchgrad-g2p-1";

}  // namespace

sg::nn::Metadata metadata_for(const Model& m, const RunState& s) {
  sg::nn::Metadata md = sg::train::config_metadata(m.config.to_map());
  md["format"] = kFormat;
  md["letters"] = sg::train::strings_to_json(m.letters.symbols(), "letters");
  md["phonemes"] = sg::train::strings_to_json(m.phonemes.symbols(), "phonemes");
  md["step"] = std::to_string(s.step);
  md["loader_epoch"] = std::to_string(s.loader.epoch);
  md["loader_batch"] = std::to_string(s.loader.batch);
  md["global_rng"] = std::to_string(s.global_rng);
  md["best_wer"] = fmt::format("{}", s.best_wer);
  md["best_per"] = fmt::format("{}", s.best_per);
  md["best_step"] = std::to_string(s.best_step);
  md["train_pairs"] = std::to_string(s.train_pairs);
  md["history"] = s.history.to_json();
  return md;
}

CheckpointFile read_checkpoint(sg::train::Checkpoint checkpoint) {
  const sg::train::MetadataReader md(checkpoint.metadata, checkpoint.path);
  md.expect_format(kFormat, "a g2p checkpoint");
  CheckpointFile c;
  c.model.config = Config::from_map(md.with_prefix("config."));
  c.model.letters = Vocabulary::from_symbols(md.strings("letters"));
  c.model.phonemes = Vocabulary::from_symbols(md.strings("phonemes"));
  RunState& s = c.state;
  s.step = md.integer("step");
  s.loader.epoch = md.integer("loader_epoch");
  s.loader.batch = md.integer("loader_batch");
  s.global_rng = md.unsigned_integer("global_rng");
  s.best_wer = md.real("best_wer");
  s.best_per = md.real("best_per");
  s.best_step = md.integer("best_step");
  s.train_pairs = md.integer("train_pairs");
  s.history = sg::train::History::from_json(md.text("history"), checkpoint.path);
  SG_CHECK(s.step >= 0 && s.history.losses.size() == static_cast<size_t>(s.step),
           "{}: checkpoint history holds {} losses for step {}", checkpoint.path,
           s.history.losses.size(), s.step);
  // The sizes the config and vocabularies claim, against the values the file holds, before a
  // model of that size is built.
  const sg::nn::TransformerOptions options =
      c.model.config.model_options(c.model.letters.size(), c.model.phonemes.size());
  sg::train::check_fits(checkpoint, options);
  {
    const sg::ForkRng keep_the_stream;  // the initial weights are replaced by the file's
    c.model.transformer = std::make_shared<sg::nn::Transformer>(options);
  }
  sg::train::restore(checkpoint, *c.model.transformer, nullptr);
  c.checkpoint = std::move(checkpoint);
  return c;
}

CheckpointFile read_checkpoint(const std::string& path) {
  return read_checkpoint(sg::train::read_checkpoint(path));
}

}  // namespace g2p
