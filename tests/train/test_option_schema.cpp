// Tests for train/option_schema.cpp: one declaration gives the metadata, the fields resume
// checks, strict reading with the flags' bounds, and checks of values set in code.
#include "train/option_schema.h"

#include <limits>

#include "tests/support/testing.h"

namespace sg::train {
namespace {

struct Example {
  int64_t layers = 3, seed = 1;
  double dropout = 0.1;
  bool norm_first = true;
  std::string activation = "gelu";
  OptionSchema schema() {
    return OptionSchema()
        .integer("layers", layers, 1, 64, OnResume::kFixedModel, "blocks")
        .integer("seed", seed, 0, std::numeric_limits<int64_t>::max(), OnResume::kFixed, "seed")
        .real("dropout", dropout, 0, 1, OnResume::kFixedModel, "dropout")
        .excluding_hi()
        .boolean("norm_first", norm_first, OnResume::kFixedModel, "pre-LN")
        .text("activation", activation, OnResume::kMayChange, "relu or gelu");
  }
};

TEST(TrainOptionSchema, OneDeclarationGivesTheMapTheFlagsAndTheResumeRules) {
  Example e;
  EXPECT_EQ(e.schema().to_map(), (ConfigMap{{"activation", "gelu"},
                                            {"dropout", "0.1"},
                                            {"layers", "3"},
                                            {"norm_first", "true"},
                                            {"seed", "1"}}));
  const std::vector<ConfigField> fields = e.schema().fields();
  ASSERT_EQ(fields.size(), 5u);
  EXPECT_EQ(fields[3].flag, "--norm-first");
  EXPECT_EQ(fields[0].on_resume, OnResume::kFixedModel);
  EXPECT_EQ(e.schema().options()[2].help, "dropout");
  // What ranks compare: every option by its flag, in declaration order.
  const auto flags = e.schema().flag_values();
  ASSERT_EQ(flags.size(), 5u);
  EXPECT_EQ(flags[3], (std::pair<std::string, std::string>{"--norm-first", "true"}));
}

TEST(TrainOptionSchema, ReadingIsStrictAndBoundedLikeTheFlags) {
  Example saved;
  saved.layers = 7, saved.dropout = 0.25, saved.norm_first = false, saved.activation = "relu";
  saved.seed = std::numeric_limits<int64_t>::max();
  Example e;
  e.schema().read(saved.schema().to_map(), "run/last.safetensors");
  EXPECT_EQ(e.schema().to_map(), saved.schema().to_map());  // every value round-trips
  ConfigMap bad = saved.schema().to_map();
  bad["layers"] = "65";
  EXPECT_SG_ERROR(e.schema().read(bad, "f"), "f: checkpoint config 'layers' is 65, not in [1, 64]");
  bad["layers"] = "7x";
  EXPECT_SG_ERROR(e.schema().read(bad, "f"), "f: checkpoint config 'layers'");
  bad = saved.schema().to_map();
  bad["dropout"] = "1";  // the flag's open end holds for a checkpoint too
  EXPECT_SG_ERROR(e.schema().read(bad, "f"), "f: checkpoint config 'dropout' is 1, not in [0, 1)");
  bad.erase("dropout");
  EXPECT_SG_ERROR(e.schema().read(bad, "f"), "f: the checkpoint's config has no 'dropout'");
  bad = saved.schema().to_map();
  bad["norm_first"] = "yes";
  EXPECT_SG_ERROR(e.schema().read(bad, "f"), "f: checkpoint config 'norm_first'");
}

TEST(TrainOptionSchema, AnExcludedEndIsOnlyForReals) {
  double rate = 0.5;
  int64_t layers = 2;
  OptionSchema s;
  s.real("lr", rate, 0, 1, OnResume::kFixed, "lr").excluding_lo();
  rate = 0;
  EXPECT_SG_ERROR(s.check(), "--lr must be in (0, 1], got 0");
  rate = 1;
  EXPECT_NO_THROW(s.check());
  s.integer("layers", layers, 1, 64, OnResume::kFixed, "blocks");
  EXPECT_SG_ERROR(s.excluding_hi(), "OptionSchema::excluding_hi: 'layers' is not a real option");
}

TEST(TrainOptionSchema, ValuesSetInCodeAreCheckedAndResumeNamesTheFlag) {
  Example e;
  EXPECT_NO_THROW(e.schema().check());
  e.dropout = 1.5;
  EXPECT_SG_ERROR(e.schema().check(), "--dropout must be in [0, 1), got 1.5");
  e.dropout = 1;  // the excluded end: everything dropped
  EXPECT_SG_ERROR(e.schema().check(), "--dropout must be in [0, 1), got 1");
  e.dropout = 0;
  EXPECT_NO_THROW(e.schema().check());
  e.dropout = 0.1;
  Example changed;
  changed.layers = 4;
  EXPECT_SG_ERROR(changed.schema().check_resume(e.schema().to_map(), "run/last.safetensors"),
                  "--layers is 3 in run/last.safetensors, 4 now");
  changed = Example();
  changed.activation = "relu";  // may change
  EXPECT_NO_THROW(changed.schema().check_resume(e.schema().to_map(), "run/last.safetensors"));
}

// A text option with choices, a flag that is not the key's, a 64-bit seed, and a value that a
// checkpoint written before the option existed stands for.
TEST(TrainOptionSchema, ChoicesFlagNamesSeedsAndOptionsOlderCheckpointsLack) {
  std::string schedule = "cosine";
  uint64_t seed = 0;
  int64_t d_ff = 64;
  const auto schema = [&] {
    return OptionSchema()
        .text("schedule", schedule, OnResume::kFixed, "noam or cosine")
        .one_of({"noam", "cosine"})
        .before_it_existed("noam")
        .unsigned_integer("seed", seed, OnResume::kFixed, "seed")
        .integer("d_ff", d_ff, 1, 65536, OnResume::kFixedModel, "width")
        .flag("--ffn");
  };
  EXPECT_EQ(schema().fields()[2].flag, "--ffn");
  schema().read({{"seed", "18446744073709551615"}, {"d_ff", "32"}}, "old.safetensors");
  EXPECT_EQ(schedule, "noam");  // the checkpoint predates the option
  EXPECT_EQ(seed, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(d_ff, 32);
  EXPECT_SG_ERROR(schema().read({{"schedule", "step"}, {"seed", "1"}, {"d_ff", "32"}}, "f"),
                  "f: checkpoint config 'schedule' must be one of noam, cosine, got 'step'");
  EXPECT_SG_ERROR(schema().read({{"seed", "-1"}, {"d_ff", "32"}}, "f"),
                  "f: checkpoint config 'seed'");
  schedule = "linear";
  EXPECT_SG_ERROR(schema().check(), "--schedule must be one of noam, cosine, got 'linear'");
  // A preset's value with no flag of its own: named for resume's messages, not on the command line.
  double beta1 = 0.9;
  const OptionSchema preset = OptionSchema()
                                  .real("beta1", beta1, 0, 1, OnResume::kFixed, "")
                                  .no_flag("beta1 (of --preset)");
  EXPECT_FALSE(preset.options()[0].command_line);
  EXPECT_EQ(preset.fields()[0].flag, "beta1 (of --preset)");
  EXPECT_SG_ERROR(OptionSchema().flag("--x"), "OptionSchema::flag: no option to modify yet");
  EXPECT_SG_ERROR(OptionSchema().integer("n", d_ff, 1, 2, OnResume::kFixed, "").one_of({"a"}),
                  "OptionSchema::one_of: 'n' is not a text option");
}

}  // namespace
}  // namespace sg::train
