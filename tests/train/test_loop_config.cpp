// Tests for train/loop_config.cpp: the loop's options declared once, with the same bounds and
// resume rules in every program, the combinations no bound catches, and the Trainer's options.
#include "train/loop_config.h"

#include "tests/support/testing.h"

namespace sg::train {
namespace {

TEST(TrainLoopConfig, DeclaresTheLoopsOptionsOnceWithTheirResumeRules) {
  LoopConfig loop{.steps = 300, .eval_every = 50, .checkpoint_every = 25};
  OptionSchema schema;
  loop.add_to(schema);
  EXPECT_EQ(schema.to_map(),
            (ConfigMap{{"checkpoint_every", "25"}, {"eval_every", "50"}, {"steps", "300"}}));
  EXPECT_EQ(flags_that_may_change(schema.fields()), "--steps, --eval-every, --checkpoint-every");

  OptionSchema offered;
  loop.add_to(offered, {.moving_average = true, .checkpoint_averaging = true});
  const std::vector<ConfigField> fields = offered.fields();
  ASSERT_EQ(fields.size(), 5u);
  EXPECT_EQ(fields[3].flag, "--ema");
  // The moving average so far depends on every step: it cannot start or change on a resume.
  EXPECT_EQ(fields[3].on_resume, OnResume::kFixed);
  EXPECT_EQ(fields[4].on_resume, OnResume::kMayChange);
  // A checkpoint written before a program offered them reads as "none".
  loop.ema = 0.5, loop.average_last = 4;
  offered.read({{"steps", "10"}, {"eval_every", "5"}, {"checkpoint_every", "0"}}, "old");
  EXPECT_EQ(loop.ema, 0);
  EXPECT_EQ(loop.average_last, 0);
  EXPECT_EQ(loop.steps, 10);
}

TEST(TrainLoopConfig, BoundsAndCombinationsAreClearErrors) {
  LoopConfig loop;
  OptionSchema schema;
  loop.add_to(schema, {.moving_average = true, .checkpoint_averaging = true});
  loop.steps = 0;
  EXPECT_SG_ERROR(schema.check(), "--steps must be in [1, 1000000000], got 0");
  loop.steps = 10;
  loop.ema = 1;
  EXPECT_SG_ERROR(loop.check(), "--ema must be a decay in (0, 1) (or 0: no moving average), got 1");
  loop.ema = 0.9, loop.average_last = 3, loop.checkpoint_every = 0;
  EXPECT_SG_ERROR(loop.check(),
                  "--average-last 3 needs step checkpoints to average: --checkpoint-every must be "
                  "positive");
  loop.checkpoint_every = 5;
  loop.check();

  TrainerOptions options{.out_dir = "runs/x", .steps = 99, .monitor = "loss"};
  loop.apply_to(options);
  EXPECT_EQ(options.steps, 10);
  EXPECT_EQ(options.eval_every, loop.eval_every);
  EXPECT_EQ(options.checkpoint_every, 5);
  EXPECT_EQ(options.average_last, 3);
  EXPECT_EQ(options.ema_decay, 0.9);
  EXPECT_EQ(options.out_dir, "runs/x");  // what the loop's config does not hold is left alone
}

}  // namespace
}  // namespace sg::train
