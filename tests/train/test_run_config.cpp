// Tests for train/run_config.cpp: a resumed run may change only the flags that say how long to
// train and how often to evaluate; any other change is refused, naming the flag and both values.
#include "train/run_config.h"

#include "tests/support/testing.h"

namespace sg::train {
namespace {

const std::vector<ConfigField> kFields = {{"d_model", "--d-model", OnResume::kFixedModel},
                                          {"task", "--task", OnResume::kFixed},
                                          {"steps", "--steps", OnResume::kMayChange},
                                          {"eval_every", "--eval-every", OnResume::kMayChange}};

TEST(TrainRunConfig, OnlyTheFlagsThatMayChangeMay) {
  const ConfigMap saved = {
      {"d_model", "32"}, {"task", "copy"}, {"steps", "20"}, {"eval_every", "5"}};
  ConfigMap longer = saved;
  longer["steps"] = "40", longer["eval_every"] = "10";
  EXPECT_NO_THROW(check_resume(saved, longer, kFields, "run/last.safetensors"));
  ConfigMap reverse = longer;
  reverse["task"] = "reverse";
  EXPECT_SG_ERROR(check_resume(saved, reverse, kFields, "run/last.safetensors"),
                  "--resume: the checkpoint's configuration differs from the requested one: --task "
                  "is copy in run/last.safetensors, reverse now (a resumed run keeps its "
                  "configuration; only --steps, --eval-every may change");
  ConfigMap wider = reverse;
  wider["d_model"] = "64";  // the model is named first
  EXPECT_SG_ERROR(check_resume(saved, wider, kFields, "p"),
                  "--resume: the checkpoint's model differs from the requested one: --d-model is "
                  "32 in p, 64 now");
  // A key the checkpoint lacks (it predates the key) is not compared.
  ConfigMap older = saved;
  older.erase("task");
  EXPECT_NO_THROW(check_resume(older, reverse, kFields, "p"));
  EXPECT_EQ(flags_that_may_change(kFields), "--steps, --eval-every");
  EXPECT_EQ(config_metadata({{"a", "1"}}), (std::map<std::string, std::string>{{"config.a", "1"}}));
}

}  // namespace
}  // namespace sg::train
