// Tests for train/checkpoint.cpp: one file holds the model and the optimizer, reading splits
// them again and refuses missing, non-regular and non-finite files, a config that claims more
// than the file holds is refused before building, and restore is all or nothing.
#include "train/checkpoint.h"

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "nn/decoder_only_transformer.h"
#include "nn/linear.h"
#include "nn/optim/adam.h"
#include "tests/nn/serialize_testing.h"
#include "tests/support/testing.h"

namespace sg::train {
namespace {

using sg::testing::TempDir;

TEST(TrainCheckpoint, OneFileWithModelAndOptimizerSplitAgainOnReading) {
  TempDir dir;
  manual_seed(0);
  nn::Linear fc(3, 2);
  optim::Adam opt(fc.parameters(), {.lr = 0.1});
  fc.weight.set_grad(ones_like(fc.weight));
  opt.step();
  save_checkpoint(dir / "last.safetensors", fc, &opt, {{"step", "1"}});
  const Checkpoint c = read_checkpoint(dir / "last.safetensors");
  EXPECT_EQ(c.model.size(), 2u);  // weight, bias
  EXPECT_EQ(c.model_values(), 8);
  EXPECT_EQ(c.metadata.at("step"), "1");
  std::vector<std::string> names;
  for (const auto& [name, _] : c.optimizer) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"step", "lr", "params", "step.0", "exp_avg.0",
                                             "exp_avg_sq.0"}));
  EXPECT_EQ(c.optimizer_path, c.path);
  // Restored into fresh objects, the next step is the same.
  nn::Linear other(3, 2);
  optim::Adam other_opt(other.parameters(), {.lr = 0.1});
  restore(c, other, &other_opt);
  EXPECT_EQ(other_opt.step_count(), 1);
  EXPECT_TRUE(sg::testing::tensors_near(other.weight, fc.weight, 0, 0));
  // A model-only file has no optimizer state to resume from.
  save_checkpoint(dir / "model.safetensors", fc, nullptr, {});
  EXPECT_SG_ERROR(restore(read_checkpoint(dir / "model.safetensors"), other, &other_opt),
                  "holds no optimizer state");
}

TEST(TrainCheckpoint, RefusesMissingNonRegularAndNonFiniteFiles) {
  TempDir dir;
  EXPECT_SG_ERROR(read_checkpoint(dir / "none.safetensors"),
                  "checkpoint " + (dir / "none.safetensors") + " does not exist");
  // A FIFO nobody writes to: refused at once, not waited on.
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_SG_ERROR(read_checkpoint(dir / "fifo"), "not a regular file");
  nn::Linear fc(2, 2);
  {
    NoGradGuard no_grad;
    fc.bias.fill_(std::numeric_limits<double>::infinity());
  }
  save_checkpoint(dir / "inf.safetensors", fc, nullptr, {});
  EXPECT_SG_ERROR(read_checkpoint(dir / "inf.safetensors"),
                  "tensor 'bias' holds infinities or NaNs (saved from a diverged run?)");
  EXPECT_EQ(first_non_finite({{"a", ones({2})}, {"b", full({2}, std::nan(""))}}), "b");
  EXPECT_EQ(first_non_finite({{"ids", ones({2}, kInt64)}}), std::nullopt);
}

TEST(TrainCheckpoint, AConfigClaimingMoreThanTheFileHoldsIsRefusedBeforeBuilding) {
  nn::TransformerOptions o;
  o.src_vocab = o.tgt_vocab = 11, o.d_model = 32, o.heads = 4, o.d_ff = 64, o.max_len = 16;
  o.num_encoder_layers = o.num_decoder_layers = 2;
  // 2 · 4 layers · 32 · 64 + 2 · 11 · 32 + 16 · 32
  EXPECT_EQ(min_state_values(o), 2 * 4 * 32 * 64 + 2 * 11 * 32 + 16 * 32);
  nn::TransformerOptions huge = o;
  huge.num_encoder_layers = 1000000000, huge.d_ff = int64_t{1} << 40;
  EXPECT_EQ(min_state_values(huge), std::numeric_limits<int64_t>::max());  // saturated, no overflow
  Checkpoint c{"ckpt", {{"w", zeros({100})}}, {}, {}, "ckpt"};
  EXPECT_SG_ERROR(check_fits(c, o),
                  "checkpoint ckpt: its config (src_vocab=11;tgt_vocab=11;d_model=32;");
  EXPECT_SG_ERROR(check_fits(c, o),
                  "describes a model of at least 17600 values, but the file holds 100");
  c.model = {{"w", zeros({17600})}};
  EXPECT_NO_THROW(check_fits(c, o));
}

// A decoder-only model's bound counts one stack and one embedding, and never exceeds what the
// model holds (a checkpoint of the model itself fits).
TEST(TrainCheckpoint, ADecoderOnlyConfigIsCheckedAgainstTheValuesTheFileHolds) {
  const nn::DecoderOnlyOptions o{
      .vocab = 11, .d_model = 8, .heads = 2, .layers = 2, .d_ff = 16, .max_len = 6};
  EXPECT_EQ(min_state_values(o), 2 * 2 * 8 * 16 + 11 * 8 + 6 * 8);
  nn::DecoderOnlyTransformer model(o);
  Checkpoint c{"ckpt", model.state_dict(), {}, {}, "ckpt"};
  EXPECT_NO_THROW(check_fits(c, o));
  nn::DecoderOnlyOptions huge = o;
  huge.layers = 64, huge.d_ff = 65536, huge.d_model = 4096;
  EXPECT_SG_ERROR(check_fits(c, huge), "checkpoint ckpt: its config (vocab=11;d_model=4096;");
}

TEST(TrainCheckpoint, RestoreNamesTheFileAndLeavesAMismatchedOptimizerAsItWas) {
  TempDir dir;
  nn::Linear fc(3, 2);
  optim::Adam opt(fc.parameters());
  fc.weight.set_grad(ones_like(fc.weight));
  opt.step();
  save_checkpoint(dir / "last.safetensors", fc, &opt, {});
  nn::Linear same(3, 2);
  optim::Adam fewer({same.bias});  // a [2] parameter where the file has state for a [2, 3] one
  const Checkpoint c = read_checkpoint(dir / "last.safetensors");
  EXPECT_SG_ERROR(restore(c, same, &fewer), "--resume: the optimizer state in " +
                                                (dir / "last.safetensors") +
                                                " does not match: Adam.load_state");
  EXPECT_EQ(fewer.step_count(), 0);
  nn::Linear wider(4, 2);
  EXPECT_SG_ERROR(restore(c, wider, nullptr), "last.safetensors");
}

TEST(TrainCheckpoint, ModelNamesThatTheOptimizerOrTheAverageUseAreRefused) {
  TempDir dir;
  class Named : public nn::Module {
   public:
    explicit Named(const std::string& child) : Module("Named") {
      register_module(child, std::make_shared<nn::Linear>(2, 2));
    }
  };
  EXPECT_SG_ERROR(save_checkpoint(dir / "a.safetensors", Named("ema"), nullptr, {}),
                  "save_checkpoint: the model's tensor 'ema.weight' starts with 'ema.', which a "
                  "checkpoint keeps for the optimizer and the moving average; rename that "
                  "submodule");
  EXPECT_SG_ERROR(save_checkpoint(dir / "a.safetensors", Named("optimizer"), nullptr, {}),
                  "'optimizer.weight' starts with 'optimizer.'");
  EXPECT_FALSE(std::filesystem::exists(dir / "a.safetensors"));
  EXPECT_NO_THROW(save_checkpoint(dir / "a.safetensors", Named("emas"), nullptr, {}));
}

}  // namespace
}  // namespace sg::train
