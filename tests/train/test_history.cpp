// Tests for train/history.cpp: the JSON round trip (non-finite values included), evaluations
// that keep their metrics, and strict reading of what a checkpoint holds.
#include "train/history.h"

#include <cmath>

#include "tests/support/testing.h"

namespace sg::train {
namespace {

TEST(TrainHistory, RoundTripsThroughJson) {
  History h;
  h.losses = {2.5, 1.25, std::nan("")};
  h.add_evaluation(2, {{"exact", 0.5}, {"token_acc", 0.75}});
  h.add_evaluation(3, {{"exact", 1.0}, {"token_acc", 1.0}});
  h.totals["seconds"] = 12.5;
  const std::string text = h.to_json();
  EXPECT_EQ(text,
            "{\"eval_steps\":[2.0,3.0],\"exact\":[0.5,1.0],\"losses\":[2.5,1.25,null],"
            "\"seconds\":12.5,\"token_acc\":[0.75,1.0]}");
  const History back = History::from_json(text, "f");
  ASSERT_EQ(back.losses.size(), 3u);
  EXPECT_EQ(back.losses[1], 1.25);
  EXPECT_TRUE(std::isnan(back.losses[2]));  // null: JSON has no NaN
  EXPECT_EQ(back.eval_steps, h.eval_steps);
  EXPECT_EQ(back.eval("token_acc"), (std::vector<double>{0.75, 1.0}));
  EXPECT_EQ(back.totals.at("seconds"), 12.5);
  EXPECT_EQ(back.to_json(), text);
  EXPECT_EQ(back.loss_steps(), (std::vector<double>{1, 2, 3}));
}

TEST(TrainHistory, EvaluationsKeepTheirMetrics) {
  History h;
  h.add_evaluation(10, {{"wer", 0.5}});
  EXPECT_SG_ERROR(h.add_evaluation(20, {{"per", 0.1}}), "metric 'per' at step 20 is new");
  EXPECT_SG_ERROR(h.add_evaluation(20, {{"wer", 0.4}, {"per", 0.1}}),
                  "2 metrics at step 20, but 1 before");
  EXPECT_SG_ERROR(History().add_evaluation(1, {{"losses", 1.0}}), "'losses' is a reserved name");
  EXPECT_SG_ERROR(h.eval("exact"), "History: no metric 'exact'");
  EXPECT_TRUE(History().eval("exact").empty());  // no evaluation yet: nothing to plot
}

TEST(TrainHistory, ReadsStrictlyAndSkipsTheOldStepsList) {
  auto read = [](const std::string& text) { return History::from_json(text, "run/last"); };
  // Older checkpoints wrote the steps 1..n beside the losses: skipped, not taken for a metric.
  const History old = read("{\"steps\":[1,2],\"losses\":[1,0.5],\"eval_steps\":[2],\"exact\":[1]}");
  EXPECT_EQ(old.evals.size(), 1u);
  EXPECT_SG_ERROR(read("[1,2]"), "run/last: checkpoint metadata 'history' is not a JSON object");
  EXPECT_SG_ERROR(read("{\"losses\":[]}"), "has no 'losses' or 'eval_steps'");
  EXPECT_SG_ERROR(read("{\"losses\":[\"a\"],\"eval_steps\":[]}"),
                  "run/last: history 'losses' holds string, not a number");
  EXPECT_SG_ERROR(read("{\"losses\":[[1]],\"eval_steps\":[]}"), "nested too deep");
  EXPECT_SG_ERROR(read("{\"losses\":[],\"eval_steps\":[1,2],\"exact\":[1]}"),
                  "holds 1 values of 'exact' for 2 evaluations");
  EXPECT_SG_ERROR(read("{\"losses\":[1,"), "checkpoint metadata 'history' is not valid");
  EXPECT_SG_ERROR(read(std::string(100000, '[') + std::string(100000, ']')), "is not valid");
}

}  // namespace
}  // namespace sg::train
